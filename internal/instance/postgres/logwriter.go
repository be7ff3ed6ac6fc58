package postgres

import (
	"bytes"

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
