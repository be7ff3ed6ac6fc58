// Package postgrescluster is the controller of PostgresClusters: a real
// PostgreSQL, a primary and streaming replicas, each a pet (a pod and a
// claim), with Services for writes and reads. The controller decides which
// instance is primary (failover.go, a pure function of what the instances
// report); the instance manager in each pod (internal/instance) acts on it.
package postgrescluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/instance/postgres"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/platform"
	"example.com/platform-operator/internal/podsecurity"
)

// kind is the name of the kind this package reconciles.
const kind = "PostgresCluster"

// statusProgressInterval is how long a status change that is only
// progress (LSNs, lag) may wait: a database under load reports new
// positions every second.
const statusProgressInterval = 10 * time.Second

// Reconciler makes each PostgresCluster's instances, Services, Secrets and
// access match its spec, decides which instance is primary, and reports
// what the instances report in the PostgresCluster's status. It is the
// PostgresCluster's part of the reconcile skeleton of package kit.
type Reconciler struct {
	kit.Base
	// ClusterDomain is the DNS domain of the cluster's Services, in the
	// application Secret and the instances' names.
	ClusterDomain string
	// InstanceImage is the operator's image, which the pods' init
	// container copies the instance manager from.
	InstanceImage string
	// PodSecurityVersion is the version of the Pod Security Standards the
	// instances' pods are judged by: the API server's.
	PodSecurityVersion podsecurity.Version

	// userSecretReads spares the API server a read of each user's
	// certificate Secret at every reconcile (see userSecretReadDue).
	userSecretReads userSecretReads

	loop *kit.Loop[v1alpha1.PostgresCluster, *v1alpha1.PostgresCluster, v1alpha1.PostgresClusterStatus, *v1alpha1.PostgresClusterStatus]
}

// NewReconciler returns the PostgresCluster reconciler of mgr, reading and
// writing with c: the manager's client, or a wrapper of it in tests.
func NewReconciler(mgr ctrl.Manager, c client.Client, opts controller.SetupOptions) *Reconciler {
	r := &Reconciler{
		Base:               kit.NewBase(mgr, c, kind, opts.Clock),
		ClusterDomain:      opts.ClusterDomain,
		InstanceImage:      cmp.Or(opts.OperatorImage, platform.DefaultImage()),
		PodSecurityVersion: opts.PodSecurityVersion,
	}
	r.loop = kit.NewLoop(&r.Base, r, func(pg *v1alpha1.PostgresCluster) *v1alpha1.PostgresClusterStatus { return &pg.Status },
		kit.LoopOptions[v1alpha1.PostgresClusterStatus]{
			Name:              "postgrescluster",
			Kind:              v1alpha1.GroupVersion.WithKind(kind).GroupKind(),
			Namespaced:        true,
			ReadyCondition:    v1alpha1.PostgresReadyCondition,
			DegradedCondition: v1alpha1.PostgresDegradedCondition,
			Conditions: []string{v1alpha1.PostgresReadyCondition, v1alpha1.PostgresPrimaryAvailableCondition,
				v1alpha1.PostgresReplicasReadyCondition, v1alpha1.PostgresDegradedCondition},
			ProgressInterval: statusProgressInterval,
			Summary:          statusSummary,
			// The status holds the election: targetPrimary and its epoch.
			GuardStatus: true,
		})
	return r
}

// +kubebuilder:rbac:groups=example.com,resources=postgresclusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=example.com,resources=postgresclusters/status,verbs=patch
// +kubebuilder:rbac:groups=example.com,resources=postgresclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=snapshot.storage.k8s.io,resources=volumesnapshots,verbs=get;list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one PostgresCluster to what its spec asks for and writes
// what it observed to its status, at most once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.loop.Reconcile(ctx, req)
}

// Sync ensures the cluster's objects, decides its primary from the
// instances' reports, makes the pods and routes match, and computes the
// status.
func (r *Reconciler) Sync(ctx context.Context, pg *v1alpha1.PostgresCluster) kit.Outcome[v1alpha1.PostgresClusterStatus] {
	var out outcome
	if err := postgres.ValidateParameters(pg.Spec.Parameters); err != nil {
		// The instances keep the configuration they have.
		out.Report(v1alpha1.PostgresInvalidSpecReason, "spec.parameters: "+err.Error())
	}
	certs := r.ensureTLS(ctx, pg, &out)
	creds := r.ensureSecrets(ctx, pg, certs.caCert, &out)
	r.ensureShared(ctx, pg, &out)
	// An object the pods would use (a Secret, their ServiceAccount and its
	// access, the Lease) that is not the cluster's is never borrowed: no
	// new pod starts while one conflicts.
	out.podsHeld = out.conflict
	listed, err := r.listClaims(ctx, pg)
	if err != nil {
		// Nothing is known of the claims: none is made or taken.
		out.Add(err, false)
		listed = nil
	}
	claims := map[string]*corev1.PersistentVolumeClaim{}
	if err == nil {
		r.settleClaims(ctx, pg, listed, &out)
		claims = r.ensureClaims(ctx, pg, listed, &out)
	}
	if errors.Is(out.Err, platform.ErrNotLeader) {
		return kit.Outcome[v1alpha1.PostgresClusterStatus]{Err: out.Err}
	}

	opts := PodOptions{InstanceImage: r.InstanceImage, ClusterDomain: r.ClusterDomain}
	hashes := map[string]string{}
	for n := 1; n <= pgspec.MaxInstances; n++ {
		hashes[pgspec.InstanceName(pg.Name, n)] = DesiredPod(pg, n, opts).Annotations[SpecHashAnnotation]
	}
	obs, err := r.observe(ctx, pg, hashes)
	if err != nil {
		return kit.Outcome[v1alpha1.PostgresClusterStatus]{Err: err}
	}
	obs.setClaims(pg, claims)
	for _, m := range obs.members {
		if m.report != nil && m.report.ParametersRefused != "" {
			// Its PostgreSQL would not start with them: it keeps its
			// configuration.
			out.Report(v1alpha1.PostgresInvalidSpecReason, fmt.Sprintf("Instance %s: %s", m.name, m.report.ParametersRefused))
		}
	}
	now := r.Clock.Now()
	e := decide(decideInput{spec: pg.Spec, status: pg.Status, clusterID: pg.Name, members: obs.members, lease: obs.lease, now: now, keptBeyond: keptBeyond(pg, listed),
		withoutQuorum: pg.Status.CurrentPrimary != "" && pg.Annotations[v1alpha1.PostgresFailoverWithoutQuorumAnnotation] == pg.Status.CurrentPrimary})
	r.ensurePods(ctx, pg, obs, e, opts, &out)
	if errors.Is(out.Err, platform.ErrNotLeader) {
		return kit.Outcome[v1alpha1.PostgresClusterStatus]{Err: out.Err}
	}
	if e.event != nil {
		r.Recorder.Eventf(pg, nil, corev1.EventTypeNormal, e.event.reason, "Elect", "%s", e.event.message)
	}
	status := computeStatus(pg, obs, e, creds, out.Problem, now)
	status.TLS = certs.status
	r.recordChanges(pg, status)
	after := kit.Soonest(kit.Soonest(e.after, leaseDeadline(obs.lease, now)), certs.renewIn)
	if out.conflict {
		after = kit.Soonest(after, 30*time.Second)
	}
	return kit.Outcome[v1alpha1.PostgresClusterStatus]{Status: &status, Err: out.Err, SpecRefused: !out.Retry, After: after}
}

// leaseDeadline is when the primary's lease lapses unless renewed: the
// operator looks again then, since a lapse is what no event tells.
func leaseDeadline(l lease, now time.Time) time.Duration {
	if l.holder == "" || l.duration == 0 {
		return 0
	}
	if d := l.renewed.Add(l.duration).Sub(now); d > 0 {
		return d + 100*time.Millisecond
	}
	return 0
}

// recordChanges emits the events of what changed in the cluster between
// its previous status and status: a password applied, instances fenced.
func (r *Reconciler) recordChanges(pg *v1alpha1.PostgresCluster, status v1alpha1.PostgresClusterStatus) {
	before, now := pg.Status.Credentials.AppliedVersion, status.Credentials.AppliedVersion
	if before != "" && now != "" && before != now {
		r.Recorder.Eventf(pg, nil, corev1.EventTypeNormal, "PasswordChanged", "Apply",
			"The password of Secret %s is set in the database", status.Credentials.AppSecret)
	}
	fenced := func(s v1alpha1.PostgresClusterStatus) map[string]bool {
		out := map[string]bool{}
		for _, i := range s.Instances {
			out[i.Name] = i.Fenced
		}
		return out
	}
	wasArchiving := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresContinuousArchivingCondition)
	if c := meta.FindStatusCondition(status.Conditions, v1alpha1.PostgresContinuousArchivingCondition); c != nil && wasArchiving != nil && c.Reason != wasArchiving.Reason {
		switch {
		case c.Reason == v1alpha1.PostgresArchiveFailingReason:
			r.Recorder.Eventf(pg, nil, corev1.EventTypeWarning, "ArchiveFailing", "Archive", "%s", c.Message)
		case wasArchiving.Reason == v1alpha1.PostgresArchiveFailingReason && c.Status == metav1.ConditionTrue:
			r.Recorder.Eventf(pg, nil, corev1.EventTypeNormal, "ArchiveResumed", "Archive", "%s", c.Message)
		}
	}
	was := fenced(pg.Status)
	for name, is := range fenced(status) {
		if is && !was[name] {
			r.Recorder.Eventf(pg, nil, corev1.EventTypeNormal, "InstanceFenced", "Fence", "Instance %s stopped PostgreSQL: it is fenced", name)
		}
	}
}

// Finalizer is the PostgresCluster's, put on only with deletionPolicy
// Delete: with Retain (the default) deleting it needs nothing of the
// operator — its pods and Services go with it through their owner
// references and its claims, which have none, stay.
func (r *Reconciler) Finalizer() string { return v1alpha1.PostgresFinalizer }

// NeedsFinalizer is true exactly while the deletion policy is Delete.
func (r *Reconciler) NeedsFinalizer(pg *v1alpha1.PostgresCluster) bool {
	return pg.Spec.DeletionPolicy == v1alpha1.DeleteClaims
}

// SetupWithManager registers the reconciler: it watches PostgresClusters,
// the objects they control, their claims and pods (the instances' reports),
// the primaries' Leases (a change of holder), and cordoned nodes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	return r.loop.Setup(mgr, maxConcurrent,
		kit.Mapped(&corev1.Pod{}, requestOf),
		kit.Mapped(&corev1.PersistentVolumeClaim{}, requestOf),
		kit.Mapped(&coordinationv1.Lease{}, requestOf, holderChanged),
		r.loop.Owned(&corev1.Service{}),
		r.loop.Owned(&corev1.Secret{}),
		r.loop.Owned(&corev1.ServiceAccount{}),
		r.loop.Owned(&rbacv1.Role{}),
		r.loop.Owned(&rbacv1.RoleBinding{}),
		r.loop.Owned(&policyv1.PodDisruptionBudget{}),
		r.loop.Owned(&networkingv1.NetworkPolicy{}),
		kit.Mapped(&corev1.Node{}, r.clustersOnNode(mgr.GetClient()), cordonChanged))
}
