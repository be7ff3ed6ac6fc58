package postgres

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
)

func TestLineLogger(t *testing.T) {
	var got []string
	log := funcr.New(func(_, args string) { got = append(got, args) }, funcr.Options{})
	l := &lineLogger{log: log}
	for _, chunk := range []string{"2026-12-02 LOG:  database system ", "is ready\nsecond line\nthird", " line\n"} {
		if _, err := l.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	// A line without its end is logged once it is too long to keep.
	if _, err := l.Write([]byte(strings.Repeat("x", maxLogLine+1))); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`"level"=0 "msg"="PostgreSQL log" "line"="2026-12-02 LOG:  database system is ready"`,
		`"level"=0 "msg"="PostgreSQL log" "line"="second line"`,
		`"level"=0 "msg"="PostgreSQL log" "line"="third line"`,
	}
	if len(got) != len(want)+1 {
		t.Fatalf("got %d records, want %d", len(got), len(want)+1)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("record %d: got %s, want %s", i, got[i], w)
		}
	}
	if n := strings.Count(got[3], "x"); n != maxLogLine+1 {
		t.Errorf("the long line has %d x, want %d", n, maxLogLine+1)
	}
}

func TestFatalRecorderKeepsTheLastFatalLine(t *testing.T) {
	var out bytes.Buffer
	f := &fatalRecorder{out: &out}
	for _, chunk := range []string{"2026-12-07 LOG:  starting\n2026-12-07 FATAL:  recovery ended ", "before configured recovery target was reached\n", "LOG:  shut down\n"} {
		if _, err := f.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.lastFatal(); got != "FATAL:  recovery ended before configured recovery target was reached" {
		t.Errorf("lastFatal = %q", got)
	}
	if !strings.Contains(out.String(), "LOG:  shut down") {
		t.Error("the output is not passed on whole")
	}
}
