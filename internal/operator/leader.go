package operator

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"example.com/platform-operator/internal/platform"
)

// serviceAccountNamespaceFile holds the pod's namespace in a cluster.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// leaseNamespace is where the leader election Lease lives: the flag, else
// the pod's own namespace. It is "" without --leader-elect.
func leaseNamespace(opts Options) (string, error) {
	if !opts.LeaderElect {
		return "", nil
	}
	if opts.LeaderElectionNamespace != "" {
		return opts.LeaderElectionNamespace, nil
	}
	data, err := os.ReadFile(serviceAccountNamespaceFile)
	if err != nil {
		return "", fmt.Errorf("no --leader-election-namespace and not in a pod: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// newLeaseLock builds the Lease lock as controller-runtime would (an
// identity unique to this process, requests that time out well within the
// renew deadline). Its client uses config as given: the lock must not go
// through the write fence, which it feeds. Its events about leadership ("X
// became leader", "X stopped leading") go to the Lease's namespace through
// eventsConfig, the fenced config: a leader that wakes up after losing its
// lease does not even report that. stop ends their delivery.
func newLeaseLock(config, eventsConfig *rest.Config, scheme *runtime.Scheme, namespace, name string) (lock resourcelock.Interface, stop func(), err error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, nil, fmt.Errorf("leader election identity: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	config = rest.AddUserAgent(config, "leader-election")
	config.Timeout = renewDeadline / 2
	core, err := typedcorev1.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election client: %w", err)
	}
	coordination, err := coordinationv1client.NewForConfig(config)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election client: %w", err)
	}
	events, err := typedcorev1.NewForConfig(eventsConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("leader election events client: %w", err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: events.Events(namespace)})
	recorder := broadcaster.NewRecorder(scheme, corev1.EventSource{Component: platform.Name})
	lock, err = resourcelock.New(resourcelock.LeasesResourceLock, namespace, name, core, coordination,
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: recorder})
	if err != nil {
		broadcaster.Shutdown()
		return nil, nil, fmt.Errorf("leader election lock: %w", err)
	}
	return lock, broadcaster.Shutdown, nil
}
