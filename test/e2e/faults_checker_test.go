package e2e

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

const (
	// recoveryBound is the longest a cluster may take to be back after a
	// fault: as long as a cluster of three may take to start from nothing
	// (pgTimeout). A recovery may have to do as much: clone an instance
	// again, wait out the primary's lease and the operator's, restart the
	// operator.
	recoveryBound = pgTimeout
	// recoverySettle is how long the cluster must look back, in a row,
	// for it to count as back: the operator's status lags what happened
	// by a report or two, and a fault just injected may not show yet.
	recoverySettle = 3 * time.Second
	// recoveryCommits is how many rows the writer must commit while the
	// cluster looks back.
	recoveryCommits = 5
)

// recovery watches a cluster until it is back after a fault.
type recovery struct {
	env         *environment
	ns, cluster string
	instances   int
	writer      *pgWriter
	// keepOperator starts the operator again if it exited.
	keepOperator func(context.Context) (bool, error)
}

// await waits, until bound after ended, for the cluster to be back:
// phase Healthy, the primary its target, every instance routed (ready, in
// the status and by its pod's role label), every pod there and none being
// deleted, the operator running, and the writer committing, all of it for
// recoverySettle in a row. It returns
// how long after ended that began, and false when it did not within
// bound.
func (r recovery) await(ended time.Time, bound time.Duration) (time.Duration, bool) {
	const poll = 250 * time.Millisecond
	deadline := ended.Add(bound)
	var since time.Time
	var committedSince int64
	for i := 0; i < int(bound/poll)+1 && time.Now().Before(deadline); i++ {
		// An operator that exited (its lease lost in an outage) is started
		// again, as its Deployment would; a failed start is tried again
		// at the next poll.
		_, _ = r.keepOperator(context.Background())
		if r.looksBack() {
			if since.IsZero() {
				since, committedSince = time.Now(), r.writer.committed.Load()
			}
			if time.Since(since) >= recoverySettle && r.writer.committed.Load()-committedSince >= recoveryCommits {
				return max(since.Sub(ended), 0), true
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(poll)
	}
	return time.Since(ended), false
}

// looksBack tells whether the cluster looks back now, but for the
// writer.
func (r recovery) looksBack() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if exited, _ := r.env.operator().Exited(); exited {
		return false
	}
	pg := &v1alpha1.PostgresCluster{}
	if err := r.env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.cluster}, pg); err != nil {
		return false
	}
	st := pg.Status
	if st.Phase != v1alpha1.PostgresHealthy || st.CurrentPrimary == "" || st.CurrentPrimary != st.TargetPrimary ||
		st.ReadyInstances != fmt.Sprintf("%d/%d", r.instances, r.instances) {
		return false
	}
	pods := &corev1.PodList{}
	if err := r.env.Client.List(ctx, pods, client.InNamespace(r.ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: r.cluster}); err != nil {
		return false
	}
	// Every pod routed, by the role label the operator sets once the
	// instance reports ready: a pod made again after a fault carries none
	// until then, whatever a status not yet updated says.
	routed := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Labels[v1alpha1.PostgresRoleLabel] != "" {
			routed++
		}
	}
	return routed == r.instances && len(pods.Items) == r.instances
}
