package postgres

import (
	"bytes"
	"io"
	"strings"
	"sync"

	"github.com/go-logr/logr"
)

// maxLogLine bounds a line kept while its end has not arrived.
const maxLogLine = 64 << 10

// lineLogger logs each line written to it: postgres's own log, when the
// Instance has no Output. exec.Cmd writes to it from one goroutine.
type lineLogger struct {
	log     logr.Logger
	pending []byte
}

func (l *lineLogger) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	for {
		n := bytes.IndexByte(l.pending, '\n')
		if n < 0 {
			break
		}
		l.log.Info("PostgreSQL log", "line", string(l.pending[:n]))
		l.pending = l.pending[n+1:]
	}
	if len(l.pending) > maxLogLine {
		l.log.Info("PostgreSQL log", "line", string(l.pending))
		l.pending = nil
	}
	return len(p), nil
}

// fatalRecorder passes postgres's output on and keeps its last FATAL or
// PANIC line: why a postgres that exited did, for its instance's report.
type fatalRecorder struct {
	out     io.Writer
	mu      sync.Mutex
	pending []byte
	last    string
}

func (f *fatalRecorder) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.pending = append(f.pending, p...)
	for {
		n := bytes.IndexByte(f.pending, '\n')
		if n < 0 {
			break
		}
		line := f.pending[:n]
		if i := bytes.Index(line, []byte("FATAL:")); i >= 0 {
			f.last = strings.TrimSpace(string(line[i:]))
		} else if i := bytes.Index(line, []byte("PANIC:")); i >= 0 {
			f.last = strings.TrimSpace(string(line[i:]))
		}
		f.pending = f.pending[n+1:]
	}
	if len(f.pending) > maxLogLine {
		f.pending = nil
	}
	f.mu.Unlock()
	return f.out.Write(p)
}

func (f *fatalRecorder) lastFatal() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}
