package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The wait for kopf ends when it answers, and at once when it has ended
// instead: a peer that cannot start does not hold the run for the timeout.
func TestWaitLive(t *testing.T) {
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer live.Close()
	if err := waitLive(context.Background(), live.URL, make(chan struct{}), nil, 10*time.Second); err != nil {
		t.Fatalf("live endpoint: %v", err)
	}

	exited := make(chan struct{})
	close(exited)
	start := time.Now()
	err := waitLive(context.Background(), "http://127.0.0.1:1/healthz", exited, func() error { return errors.New("kopf ended") }, 10*time.Second)
	if err == nil || err.Error() != "kopf ended" {
		t.Fatalf("ended process: got %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("ended process: waited %s", took)
	}

	err = waitLive(context.Background(), "http://127.0.0.1:1/healthz", make(chan struct{}), nil, 500*time.Millisecond)
	if err == nil {
		t.Fatal("nothing listening: no error")
	}
}
