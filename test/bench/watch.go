package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"example.com/platform-operator/test/bench/benchkit"
)

// eventType is the kind of an informer's event.
type eventType int

const (
	added eventType = iota
	updated
	deleted
)

// hub fans the events of one informer out to the waiters of the moment.
type hub struct {
	mu   sync.Mutex
	next int
	subs map[int]func(obj metav1.Object, ev eventType)
}

func newHub() *hub { return &hub{subs: map[int]func(metav1.Object, eventType){}} }

// subscribe calls f for every event until the returned function is called.
func (h *hub) subscribe(f func(obj metav1.Object, ev eventType)) (unsubscribe func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := h.next
	h.next++
	h.subs[id] = f
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs, id)
	}
}

func (h *hub) publish(obj any, ev eventType) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	h.mu.Lock()
	subs := make([]func(metav1.Object, eventType), 0, len(h.subs))
	for _, f := range h.subs {
		subs = append(subs, f)
	}
	h.mu.Unlock()
	for _, f := range subs {
		f(m, ev)
	}
}

// handler connects an informer to the hub.
func (h *hub) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.publish(obj, added) },
		UpdateFunc: func(_, obj any) { h.publish(obj, updated) },
		DeleteFunc: func(obj any) { h.publish(obj, deleted) },
	}
}

// progress records when each of target objects first met a condition.
type progress struct {
	what   string
	target int
	start  time.Time

	mu      sync.Mutex
	first   map[string]time.Time
	last    time.Time
	reached chan struct{}
}

func newProgress(what string, target int, start time.Time) *progress {
	return &progress{what: what, target: target, start: start, first: map[string]time.Time{}, reached: make(chan struct{})}
}

// mark records that key met the condition now, if it had not before, and
// reports whether this is its first time.
func (p *progress) mark(key string) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, seen := p.first[key]; seen {
		return false
	}
	p.first[key] = now
	p.last = now
	if len(p.first) == p.target {
		close(p.reached)
	}
	return true
}

// timelineLocked is the Timeline of the objects seen so far; p.mu is held.
func (p *progress) timelineLocked() []float64 {
	times := make([]float64, 0, len(p.first))
	for _, t := range p.first {
		times = append(times, t.Sub(p.start).Seconds())
	}
	slices.Sort(times)
	points := min(timelinePoints, p.target)
	out := make([]float64, 0, points)
	for i := 1; i <= points; i++ {
		k := (i*p.target+points-1)/points - 1 // index of the (i/points)th object
		if k >= len(times) {
			break
		}
		out = append(out, benchkit.Round3(times[k]))
	}
	return out
}

// lagBehind summarizes, over the keys both saw, how long after earlier saw
// a key p saw it; nil when they share none.
func (p *progress) lagBehind(earlier *progress) *lagResult {
	earlier.mu.Lock()
	from := maps.Clone(earlier.first)
	earlier.mu.Unlock()
	p.mu.Lock()
	var lags []float64
	for key, at := range p.first {
		if t, ok := from[key]; ok {
			lags = append(lags, max(0, at.Sub(t).Seconds()))
		}
	}
	p.mu.Unlock()
	if len(lags) == 0 {
		return nil
	}
	slices.Sort(lags)
	return &lagResult{Samples: len(lags), P50: benchkit.Round3(benchkit.Percentile(lags, 0.50)), P99: benchkit.Round3(benchkit.Percentile(lags, 0.99)), Max: benchkit.Round3(lags[len(lags)-1])}
}

func (p *progress) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.first)
}

// waitResult is the outcome of waiting for a number of objects.
type waitResult struct {
	// Seconds is the time from the start until the last object met the
	// condition, or until the deadline when TimedOut.
	Seconds  float64 `json:"seconds"`
	Reached  int     `json:"reached"`
	Target   int     `json:"target"`
	TimedOut bool    `json:"timedOut,omitempty"`
	// Interrupted is set when the benchmark was stopped during the wait.
	Interrupted bool `json:"interrupted,omitempty"`
	// Aborted says why the wait was given up before its deadline.
	Aborted string `json:"aborted,omitempty"`
	// Timeline[i] is the time from the start until (i+1)/len(Timeline) of
	// the target had met the condition, for the charts over time.
	Timeline []float64 `json:"timeline,omitempty"`
}

// timelinePoints is the number of points of a waitResult's Timeline.
const timelinePoints = 50

func (w waitResult) String() string {
	switch {
	case w.Aborted != "":
		return fmt.Sprintf("aborted after %.1f s at %d/%d: %s", w.Seconds, w.Reached, w.Target, w.Aborted)
	case w.Interrupted:
		return fmt.Sprintf("interrupted at %d/%d", w.Reached, w.Target)
	case w.TimedOut:
		return fmt.Sprintf("timed out after %.1f s at %d/%d", w.Seconds, w.Reached, w.Target)
	}
	return fmt.Sprintf("%.2f s", w.Seconds)
}

func (w waitResult) ok() bool {
	return w.Target > 0 && !w.TimedOut && !w.Interrupted && w.Aborted == "" && w.Reached >= w.Target
}

// wait blocks until every object met the condition, the deadline passes or
// ctx ends, logging progress every 5 s. When check, called every 5 s, fails,
// the wait is aborted: the objects will not get there.
func (p *progress) wait(ctx context.Context, deadline time.Time, logf func(string, ...any), check ...func() error) waitResult {
	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case <-p.reached:
			p.mu.Lock()
			defer p.mu.Unlock()
			return waitResult{Seconds: benchkit.Round3(p.last.Sub(p.start).Seconds()), Reached: len(p.first), Target: p.target, Timeline: p.timelineLocked()}
		case <-ticker.C:
			logf("%s: %d/%d", p.what, p.count(), p.target)
			for _, c := range check {
				if err := c(); err != nil {
					logf("%s: giving up: %v", p.what, err)
					return waitResult{Seconds: benchkit.Round3(time.Since(p.start).Seconds()), Reached: p.count(), Target: p.target, Aborted: err.Error()}
				}
			}
		case <-timer.C:
			return waitResult{Seconds: benchkit.Round3(time.Since(p.start).Seconds()), Reached: p.count(), Target: p.target, TimedOut: true}
		case <-ctx.Done():
			return waitResult{Seconds: benchkit.Round3(time.Since(p.start).Seconds()), Reached: p.count(), Target: p.target, Interrupted: true}
		}
	}
}
