package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"example.com/platform-operator/test/bench/benchkit"
)

// serviceProbeCount is how many objects each step of the services scenario
// creates.
const serviceProbeCount = 200

// serviceProbeResult tells whether creates of a kind go faster with more
// workers: the seconds to create serviceProbeCount objects with one worker
// and with the load client's workers, on the bare cluster.
type serviceProbeResult struct {
	Count   int `json:"count"`
	Workers int `json:"workers"`
	// ClusterIP Services (what a Website's Service is), headless Services
	// (no address to allocate) and ConfigMaps (a plain object).
	ServicesOne      float64 `json:"clusterIPServicesOneWorkerSeconds"`
	ServicesMany     float64 `json:"clusterIPServicesManyWorkersSeconds"`
	HeadlessOne      float64 `json:"headlessServicesOneWorkerSeconds"`
	HeadlessMany     float64 `json:"headlessServicesManyWorkersSeconds"`
	ConfigMapsOne    float64 `json:"configMapsOneWorkerSeconds"`
	ConfigMapsMany   float64 `json:"configMapsManyWorkersSeconds"`
	Errors           int     `json:"errors"`
	NamespaceSeconds float64 `json:"namespaceDeletionSeconds"`
}

// serviceProbe creates ClusterIP Services, headless Services and ConfigMaps
// with one worker and with the load client's workers, on the bare cluster
// before the ceilings: ClusterIP Services that take as long with many
// workers as with one are created one at a time by the API server (their
// address allocation), which bounds the ceiling and the operator alike.
func (e *env) serviceProbe(ctx context.Context) (*serviceProbeResult, error) {
	defer e.phase("services: creates with 1 and many workers")()
	const ns = "service-probe"
	res := &serviceProbeResult{Count: serviceProbeCount, Workers: e.cfg.load.Workers}
	if err := e.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	cs, _, err := e.loadClients()
	if err != nil {
		return nil, err
	}
	service := func(name string, headless bool) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"probe": name},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		}}
		if headless {
			s.Spec.ClusterIP = corev1.ClusterIPNone
			s.Spec.Ports[0].TargetPort = intstr.FromInt32(80)
		}
		return s
	}
	steps := []struct {
		into   *float64
		prefix string
		many   bool
		create func(ctx context.Context, name string) error
	}{
		{&res.ServicesOne, "ip1", false, func(ctx context.Context, name string) error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, service(name, false), metav1.CreateOptions{})
			return err
		}},
		{&res.ServicesMany, "ipn", true, func(ctx context.Context, name string) error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, service(name, false), metav1.CreateOptions{})
			return err
		}},
		{&res.HeadlessOne, "hl1", false, func(ctx context.Context, name string) error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, service(name, true), metav1.CreateOptions{})
			return err
		}},
		{&res.HeadlessMany, "hln", true, func(ctx context.Context, name string) error {
			_, err := cs.CoreV1().Services(ns).Create(ctx, service(name, true), metav1.CreateOptions{})
			return err
		}},
		{&res.ConfigMapsOne, "cm1", false, func(ctx context.Context, name string) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
			return err
		}},
		{&res.ConfigMapsMany, "cmn", true, func(ctx context.Context, name string) error {
			_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, s := range steps {
		workers := 1
		if s.many {
			workers = e.cfg.load.Workers
		}
		start := time.Now()
		failed, _ := benchkit.ForEach(ctx, res.Count, workers, func(ctx context.Context, i int) error {
			return benchkit.IgnoreExists(s.create(ctx, fmt.Sprintf("%s-%05d", s.prefix, i)))
		})
		*s.into = benchkit.Round3(time.Since(start).Seconds())
		res.Errors += failed
	}
	e.logf("services: %d creates, 1 worker / %d workers: ClusterIP Services %.2f s / %.2f s, headless Services %.2f s / %.2f s, ConfigMaps %.2f s / %.2f s",
		res.Count, res.Workers, res.ServicesOne, res.ServicesMany, res.HeadlessOne, res.HeadlessMany, res.ConfigMapsOne, res.ConfigMapsMany)
	took, err := e.deleteNamespace(ctx, ns)
	res.NamespaceSeconds = benchkit.Round3(took.Seconds())
	return res, err
}
