package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/test/bench/benchkit"
)

const (
	// driftImage is what the drift scenario sets a Deployment's image to.
	driftImage   = "nginx:drift"
	driftManager = "bench-drift"
	driftTimeout = 30 * time.Second
)

var errTimedOut = errors.New("timed out")

// driftCase is one kind of change made behind the operator's back: change
// makes it to the child of the named Website and returns how long until
// the child was seen restored.
type driftCase struct {
	kind, action, progress string
	change                 func(ctx context.Context, name string) (time.Duration, error)
}

// drift changes children behind the operator's back and measures how long
// until they are restored.
func (e *env) drift(ctx context.Context) error {
	defer e.phase("drift")()
	cpu0 := e.snapshotCPU()
	defer e.recordCPU("drift", cpu0)
	rng := rand.New(rand.NewPCG(uint64(e.n), 6))
	for _, c := range []driftCase{
		{"Service", "delete", "Services deleted", e.driftService},
		{"Deployment", "image changed by another field manager (strategic merge patch)", "Deployments changed", e.driftDeployment},
	} {
		res := driftResult{Kind: c.kind, Action: c.action}
		for i := range e.cfg.driftCount {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			name := siteName(rng.IntN(e.n))
			d, err := c.change(ctx, name)
			switch {
			case errors.Is(err, errTimedOut):
				res.Timeouts++
			case err != nil:
				res.Errors++
				e.logf("drift: %s %s: %v", c.kind, name, err)
			default:
				res.Samples = append(res.Samples, benchkit.Round3(d.Seconds()))
			}
			if (i+1)%25 == 0 {
				e.logf("drift: %d/%d %s", i+1, e.cfg.driftCount, c.progress)
			}
		}
		res.summarize()
		e.res.Drift = append(e.res.Drift, res)
		e.logf("drift: %s %s: restored after p50 %.3f s, p99 %.3f s, max %.3f s, %d timeouts", c.kind, shortAction(c.action), res.P50, res.P99, res.Max, res.Timeouts)
	}
	return nil
}

func (e *env) driftService(ctx context.Context, name string) (time.Duration, error) {
	old, err := e.services.Services(benchNamespace).Get(name)
	if err != nil {
		return 0, err
	}
	restored := make(chan struct{})
	var once sync.Once
	defer e.serviceHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev != deleted && obj.GetName() == name && obj.GetUID() != old.UID {
			once.Do(func() { close(restored) })
		}
	})()
	start := time.Now()
	uid := old.UID
	if err := e.admin.CoreV1().Services(benchNamespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return 0, err
	}
	return waitClosed(ctx, restored, start)
}

func (e *env) driftDeployment(ctx context.Context, name string) (time.Duration, error) {
	old, err := e.deployments.Deployments(benchNamespace).Get(name)
	if err != nil {
		return 0, err
	}
	original := ""
	for _, c := range old.Spec.Template.Spec.Containers {
		if c.Name == website.ContainerName {
			original = c.Image
		}
	}
	if original == "" || original == driftImage {
		return 0, fmt.Errorf("unexpected image %q", original)
	}
	restored := make(chan struct{})
	var once sync.Once
	var sawDrift atomic.Bool
	defer e.deploymentHub.subscribe(func(obj metav1.Object, ev eventType) {
		d, ok := obj.(*appsv1.Deployment)
		if ev == deleted || !ok || d.Name != name {
			return
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != website.ContainerName {
				continue
			}
			switch {
			case c.Image == driftImage:
				sawDrift.Store(true)
			case c.Image == original && sawDrift.Load():
				once.Do(func() { close(restored) })
			}
		}
	})()
	patch := fmt.Appendf(nil, `{"spec":{"template":{"spec":{"containers":[{"name":%q,"image":%q}]}}}}`, website.ContainerName, driftImage)
	start := time.Now()
	if _, err := e.admin.AppsV1().Deployments(benchNamespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: driftManager}); err != nil {
		return 0, err
	}
	return waitClosed(ctx, restored, start)
}

func waitClosed(ctx context.Context, ch <-chan struct{}, start time.Time) (time.Duration, error) {
	select {
	case <-ch:
		return time.Since(start), nil
	case <-time.After(driftTimeout):
		return 0, errTimedOut
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (d *driftResult) summarize() {
	if len(d.Samples) == 0 {
		return
	}
	s := append([]float64(nil), d.Samples...)
	sort.Float64s(s)
	d.P50 = benchkit.Percentile(s, 0.50)
	d.P99 = benchkit.Percentile(s, 0.99)
	d.Max = s[len(s)-1]
}
