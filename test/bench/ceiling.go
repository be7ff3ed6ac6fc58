package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/test/bench/benchkit"
)

// ceiling creates (POST) the Deployments, and with services the Services,
// that the operator builds for N Websites, directly with the load client
// (no client-side rate limit, 16 workers by default), and measures how long
// they take to exist and to be available: what no operator on this cluster
// can beat.
func (e *env) ceiling(ctx context.Context, services bool) (*ceilingResult, error) {
	kinds, name := "Deployments", "ceiling (Deployments alone)"
	if services {
		kinds, name = "Deployments and Services", "ceiling (Deployments and Services)"
	}
	defer e.phase(name)()
	res := &ceilingResult{Kinds: kinds, Client: e.cfg.load}
	if err := e.createNamespace(ctx, ceilingNamespace); err != nil {
		return nil, err
	}
	cs, _, err := e.loadClients()
	if err != nil {
		return nil, err
	}
	infCtx, stop := context.WithCancel(ctx)
	defer stop()
	factory := informers.NewSharedInformerFactoryWithOptions(e.admin, 0, informers.WithNamespace(ceilingNamespace))
	depHub, svcHub := newHub(), newHub()
	factory.Apps().V1().Deployments().Informer().AddEventHandler(depHub.handler())
	factory.Core().V1().Services().Informer().AddEventHandler(svcHub.handler())
	factory.Start(infCtx.Done())
	factory.WaitForCacheSync(infCtx.Done())
	defer factory.Shutdown()
	defer stop()

	cpu0 := e.snapshotCPU()
	before, err := benchkit.ScrapeAPIServer(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	objects := e.n
	if services {
		objects = 2 * e.n
	}
	start := time.Now()
	deployments := newProgress(name+": Deployments exist", e.n, start)
	exist := newProgress(name+": "+kinds+" exist", objects, start)
	available := newProgress(name+": Deployments available", e.n, start)
	defer depHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev == deleted {
			return
		}
		deployments.mark(obj.GetName())
		exist.mark("deployment/" + obj.GetName())
		if d, ok := obj.(*appsv1.Deployment); ok && deploymentAvailable(d) {
			available.mark(d.Name)
		}
	})()
	defer svcHub.subscribe(func(obj metav1.Object, ev eventType) {
		if ev != deleted {
			exist.mark("service/" + obj.GetName())
		}
	})()

	if services {
		waitProfiles := e.startCPUProfiles(ctx, "ceiling")
		defer waitProfiles()
	}
	e.logf("%s: creating %d %s with %s", name, e.n, kinds, e.cfg.load)
	res.CreateErrors, err = benchkit.ForEach(ctx, e.n, e.cfg.load.Workers, func(ctx context.Context, i int) error {
		d, s, err := ceilingObjects(siteName(i))
		if err != nil {
			return err
		}
		if _, err := cs.AppsV1().Deployments(ceilingNamespace).Create(ctx, d, metav1.CreateOptions{}); benchkit.IgnoreExists(err) != nil {
			return err
		}
		if !services {
			return nil
		}
		_, err = cs.CoreV1().Services(ceilingNamespace).Create(ctx, s, metav1.CreateOptions{})
		return benchkit.IgnoreExists(err)
	})
	if err != nil {
		res.FirstError = err.Error()
	}
	res.CreateCallsSeconds = benchkit.Round3(time.Since(start).Seconds())
	e.logf("%s: create calls done after %.2f s (%d errors)", name, res.CreateCallsSeconds, res.CreateErrors)
	deadline := start.Add(e.deadline)
	res.DeploymentsExist = deployments.wait(ctx, deadline, e.logf)
	res.Exist = exist.wait(ctx, deadline, e.logf)
	e.logf("%s: all %s exist: %s", name, kinds, res.Exist)
	res.Available = available.wait(ctx, deadline, e.logf, e.podsMarkedNotReady(ctx, ceilingNamespace))
	e.logf("%s: all Deployments available: %s", name, res.Available)
	res.CPUSeconds = e.recordCPU(name, cpu0)
	after, err := benchkit.ScrapeAPIServer(ctx, e.admin)
	if err != nil {
		return res, err
	}
	res.Writes, res.Reads = after.WritesSince(before), after.ReadsSince(before)
	res.KCMDeploymentMainWrites = res.Writes.Sum("apps/deployments") - float64(e.n-res.CreateErrors)
	res.EventWritesNonOperator = res.Writes.Sum("events") + res.Writes.Sum("events.k8s.io/events")
	e.logf("%s: write requests by verb and resource: %s", name, strings.Join(res.Writes.Sorted(), " "))
	e.logf("%s: read requests by verb and resource: %s", name, strings.Join(res.Reads.Sorted(), " "))

	return res, nil
}

// ceilingObjects are the Deployment and Service the operator builds for the
// Website name (website.DesiredDeployment and DesiredService of a testgen
// Website), as typed objects to create, in the ceiling's namespace. The
// owner references are removed: the Website does not exist, and the garbage
// collector would delete the children at once.
func ceilingObjects(name string) (*appsv1.Deployment, *corev1.Service, error) {
	d, s, err := websiteChildren(websitetest.Website(name, ceilingNamespace))
	if err != nil {
		return nil, nil, err
	}
	d.OwnerReferences, s.OwnerReferences = nil, nil
	return d, s, nil
}

// websiteChildren are the Deployment and Service the operator builds for w, owned
// by w, as typed objects to create.
func websiteChildren(w *websitev1.Website) (*appsv1.Deployment, *corev1.Service, error) {
	d, s := &appsv1.Deployment{}, &corev1.Service{}
	for _, c := range []struct {
		from any
		into runtime.Object
	}{{website.DesiredDeployment(w), d}, {website.DesiredService(w), s}} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c.from)
		if err != nil {
			return nil, nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, c.into); err != nil {
			return nil, nil, fmt.Errorf("decode %T: %w", c.into, err)
		}
	}
	return d, s, nil
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return d.Status.AvailableReplicas >= want && d.Status.ObservedGeneration >= d.Generation
}
