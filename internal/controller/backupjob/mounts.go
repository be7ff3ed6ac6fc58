package backupjob

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespacePodsMaxAge is how long one list of a namespace's pods answers
// where its claims are mounted. A pod that starts meanwhile on another
// node is missed, as it would be by a list made a moment before it.
const namespacePodsMaxAge = 2 * time.Second

// namespacePodsListTimeout bounds a shared list, which no single caller's
// context may cut short.
const namespacePodsListTimeout = 30 * time.Second

// namespacePods lists the pods of a namespace that may hold a volume (not
// finished), for the runs whose copy Job must go where their source is
// mounted. The operator caches no pods but its own, so the list goes to
// the API server; at a scheduled minute every BackupJob of a namespace
// starts its run at once, and one list each would cost the API server and
// the operator in proportion to the number of BackupJobs times the number
// of pods. So the runs that start together share one list, made by the
// first of them, and a list answers for namespacePodsMaxAge.
//
// Lists age by the real clock, not the reconciler's: this is a bound on
// the API server's load, and a test's clock that never moves would keep
// one list forever.
type namespacePods struct {
	// clock ages the lists; nil is the real clock.
	clock clock.PassiveClock
	group singleflight.Group
	mu    sync.Mutex
	lists map[string]podsListed
}

// podsListed is a namespace's pods, reduced to what sourceNode reads, and
// when their list began.
type podsListed struct {
	at   time.Time
	pods []corev1.Pod
}

// list returns the unfinished pods of namespace, read with reader, from a
// list begun at most namespacePodsMaxAge ago. The pods are shared: read,
// never changed. The list is made under a context of its own, so that a
// caller that gives up (its ctx is done) fails alone, not the callers that
// share its list.
func (n *namespacePods) list(ctx context.Context, reader client.Reader, namespace string) ([]corev1.Pod, error) {
	clk := n.clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	n.mu.Lock()
	listed, ok := n.lists[namespace]
	n.mu.Unlock()
	if ok && clk.Since(listed.at) < namespacePodsMaxAge {
		return listed.pods, nil
	}
	shared := n.group.DoChan(namespace, func() (any, error) {
		listCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), namespacePodsListTimeout)
		defer cancel()
		began := clk.Now()
		list := &corev1.PodList{}
		unfinished := fields.AndSelectors(
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))
		if err := reader.List(listCtx, list, client.InNamespace(namespace), client.MatchingFieldsSelector{Selector: unfinished}); err != nil {
			return nil, fmt.Errorf("list the pods of namespace %s, to find where a claim is mounted: %w", namespace, err)
		}
		pods := make([]corev1.Pod, 0, len(list.Items))
		for i := range list.Items {
			pods = append(pods, mountsOnly(&list.Items[i]))
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.lists == nil {
			n.lists = map[string]podsListed{}
		}
		for ns, l := range n.lists {
			if clk.Since(l.at) >= namespacePodsMaxAge {
				delete(n.lists, ns)
			}
		}
		n.lists[namespace] = podsListed{at: began, pods: pods}
		return pods, nil
	})
	select {
	case res := <-shared:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]corev1.Pod), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("list the pods of namespace %s, to find where a claim is mounted: %w", namespace, ctx.Err())
	}
}

// mountsOnly is p with only what tells where it mounts which claim: its
// name, node, phase and claim volumes.
func mountsOnly(p *corev1.Pod) corev1.Pod {
	out := corev1.Pod{}
	out.Name, out.Namespace = p.Name, p.Namespace
	out.Spec.NodeName, out.Status.Phase = p.Spec.NodeName, p.Status.Phase
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out.Spec.Volumes = append(out.Spec.Volumes, corev1.Volume{Name: v.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		}
	}
	return out
}
