package postgrescluster

import (
	"context"
	"errors"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/controller/kit"
	"example.com/platform-operator/internal/pgspec"
	"example.com/platform-operator/internal/platform"
)

// outcome collects the errors of one reconcile and the first problem for
// status. retry is false when every error is a refusal of the spec.
type outcome struct {
	err      error
	retry    bool
	conflict bool
	problem  *cause
}

// cause is a reason and message for a condition.
type cause struct{ reason, message string }

func (o *outcome) add(err error, invalid bool) {
	if err == nil {
		return
	}
	o.err = errors.Join(o.err, err)
	o.retry = o.retry || !invalid
}

func (o *outcome) report(reason, message string) {
	if o.problem == nil {
		o.problem = &cause{reason: reason, message: kit.TruncateMessage(message)}
	}
}

// record turns what Ensure did to one child into the outcome.
func (o *outcome) record(res children.Result) {
	switch res.Action {
	case children.Conflict:
		o.conflict = true
		o.report(v1alpha1.PostgresConflictReason, res.Message)
	case children.Invalid:
		o.add(res.Err, true)
		o.report(v1alpha1.PostgresInvalidSpecReason, res.Message)
	case children.Failed:
		o.add(res.Err, false)
		if !errors.Is(res.Err, platform.ErrNotLeader) && !apierrors.IsConflict(res.Err) {
			o.report(v1alpha1.PostgresApplyFailedReason, res.Message)
		}
	}
}

// ensureShared ensures what the instances share: the instance managers'
// access, the Services, the disruption budgets (deleting those no longer
// wanted) and the primary's Lease.
func (r *Reconciler) ensureShared(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) {
	out.record(r.Children.Ensure(ctx, pg, DesiredAccount(pg), &corev1.ServiceAccount{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, DesiredRole(pg), &rbacv1.Role{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, DesiredRoleBinding(pg), &rbacv1.RoleBinding{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, desiredHeadlessService(pg), &corev1.Service{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, desiredRoleService(pg, pgspec.WriteService(pg.Name), v1alpha1.PostgresPrimaryRole), &corev1.Service{}, children.WithoutCreateEvent()))
	out.record(r.Children.Ensure(ctx, pg, desiredRoleService(pg, pgspec.ReadService(pg.Name), v1alpha1.PostgresReplicaRole), &corev1.Service{}, children.WithoutCreateEvent()))
	for _, budget := range DesiredBudgets(pg) {
		out.record(r.Children.Ensure(ctx, pg, budget, &policyv1.PodDisruptionBudget{}, children.WithoutCreateEvent()))
	}
	for _, name := range unwantedBudgets(pg) {
		// A budget kept after a scale-down could only block drains: see
		// replicasMinAvailable.
		key := types.NamespacedName{Namespace: pg.Namespace, Name: name}
		if _, err := r.Children.Delete(ctx, pg, key, &policyv1.PodDisruptionBudget{}); err != nil {
			out.record(children.Result{Action: children.Failed, Err: err, Message: err.Error()})
		}
	}
	out.record(r.Children.Ensure(ctx, pg, DesiredLease(pg), &coordinationv1.Lease{}, children.WithoutCreateEvent()))
}

// credentials is what the status says of the Secrets.
type credentials struct {
	appSecret string
	// appVersion is the resourceVersion of the application Secret, whose
	// password the primary must set.
	appVersion string
}

// ensureSecrets makes the Secrets the operator generates, once: a Secret
// that exists is never written again, so a password a person changed stays
// (the primary's instance manager sets it in the database). A user's
// application Secret must exist and hold a username and a password.
func (r *Reconciler) ensureSecrets(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) credentials {
	creds := credentials{appSecret: pgspec.AppSecret(pg)}
	for i := range DesiredGeneratedSecrets(pg, "", r.ClusterDomain) {
		build := func(p string) *corev1.Secret { return DesiredGeneratedSecrets(pg, p, r.ClusterDomain)[i] }
		live, err := r.createSecretOnce(ctx, pg, build)
		if err != nil {
			out.add(err, false)
			out.report(v1alpha1.PostgresApplyFailedReason, err.Error())
			continue
		}
		if live != nil && live.Name == creds.appSecret {
			creds.appVersion = live.ResourceVersion
		}
	}
	if creds.appSecret != pgspec.GeneratedAppSecret(pg.Name) {
		r.checkUserSecret(ctx, pg, &creds, out)
	}
	return creds
}

// createSecretOnce creates the Secret that build makes unless it exists;
// it returns the Secret, nil on a conflict (reported in out by the caller
// through the error).
func (r *Reconciler) createSecretOnce(ctx context.Context, pg *v1alpha1.PostgresCluster, build func(string) *corev1.Secret) (*corev1.Secret, error) {
	probe := build("")
	live := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(probe), live)
	switch {
	case err == nil && metav1IsControlledBy(live, pg):
		return live, nil
	case err == nil:
		return nil, fmt.Errorf("Secret %s exists and is not PostgresCluster %s's: rename or delete it", probe.Name, pg.Name)
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get Secret %s: %w", probe.Name, err)
	}
	password, err := newPassword()
	if err != nil {
		return nil, err
	}
	secret := build(password)
	if err := r.Client.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: it is not labelled as the operator's.
			return nil, fmt.Errorf("Secret %s exists and is not PostgresCluster %s's: rename or delete it", secret.Name, pg.Name)
		}
		return nil, fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	children.CountWrite(kind, "Secret", "create")
	return secret, nil
}

// checkUserSecret checks the application Secret the user named, read from
// the API server: the cache holds only the operator's Secrets.
func (r *Reconciler) checkUserSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, creds *credentials, out *outcome) {
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: creds.appSecret}, secret)
	switch {
	case apierrors.IsNotFound(err):
		out.report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by spec.bootstrap.initdb.secretName does not exist", creds.appSecret))
		return
	case err != nil:
		out.add(fmt.Errorf("get Secret %s: %w", creds.appSecret, err), false)
		return
	}
	owner := initDB(pg).Owner
	switch {
	case len(secret.Data[PasswordKey]) == 0:
		out.report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s has no %s key", creds.appSecret, PasswordKey))
	case string(secret.Data[UsernameKey]) != owner:
		out.report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s: its %s must be %q, the owner of spec.bootstrap.initdb", creds.appSecret, UsernameKey, owner))
	default:
		creds.appVersion = secret.ResourceVersion
	}
}

// ensureClaims makes each instance's claim, and grows those smaller than
// spec.storage.size; a claim is never shrunk, nor one taken that is not the
// cluster's.
func (r *Reconciler) ensureClaims(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) map[string]*corev1.PersistentVolumeClaim {
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for n := 1; n <= int(pg.Spec.Instances); n++ {
		desired := DesiredClaim(pg, n)
		live := &corev1.PersistentVolumeClaim{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), live)
		switch {
		case apierrors.IsNotFound(err):
			if pg.Spec.Hibernate {
				continue
			}
			if n == 1 && restoring(pg) {
				// The first instance starts from the backup; the others
				// clone it once it runs.
				source, err := r.restoreSource(ctx, pg)
				if errors.As(err, &noBackupError{}) {
					out.report(v1alpha1.PostgresBackupNotFoundReason, err.Error())
					continue
				}
				if err != nil {
					out.add(fmt.Errorf("choose the backup to restore: %w", err), false)
					out.report(v1alpha1.PostgresApplyFailedReason, err.Error())
					continue
				}
				desired.Spec.DataSourceRef = source
			}
			if err := r.Client.Create(ctx, desired); err != nil {
				if apierrors.IsAlreadyExists(err) {
					out.conflict = true
					out.report(v1alpha1.PostgresConflictReason, fmt.Sprintf("PersistentVolumeClaim %s exists and is not PostgresCluster %s's", desired.Name, pg.Name))
					continue
				}
				out.add(fmt.Errorf("create PersistentVolumeClaim %s: %w", desired.Name, err), apierrors.IsInvalid(err))
				out.report(v1alpha1.PostgresApplyFailedReason, err.Error())
				continue
			}
			children.CountWrite(kind, "PersistentVolumeClaim", "create")
			claims[desired.Name] = desired
		case err != nil:
			out.add(fmt.Errorf("get PersistentVolumeClaim %s: %w", desired.Name, err), false)
		case live.Labels[v1alpha1.PostgresClusterLabel] != pg.Name:
			out.conflict = true
			out.report(v1alpha1.PostgresConflictReason, fmt.Sprintf("PersistentVolumeClaim %s belongs to another PostgresCluster", desired.Name))
		default:
			claims[live.Name] = live
			r.growClaim(ctx, pg, live, out)
		}
	}
	return claims
}

// growClaim raises the claim's request to spec.storage.size when it is
// smaller; the storage driver expands the volume.
func (r *Reconciler) growClaim(ctx context.Context, pg *v1alpha1.PostgresCluster, claim *corev1.PersistentVolumeClaim, out *outcome) {
	want := pg.Spec.Storage.Size
	have := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return
	}
	patch := client.MergeFromWithOptions(claim.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if claim.Spec.Resources.Requests == nil {
		claim.Spec.Resources.Requests = corev1.ResourceList{}
	}
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = want.DeepCopy()
	if err := r.Client.Patch(ctx, claim, patch); err != nil {
		out.add(fmt.Errorf("grow PersistentVolumeClaim %s to %s: %w", claim.Name, want.String(), err), apierrors.IsInvalid(err) || apierrors.IsForbidden(err))
		out.report(v1alpha1.PostgresApplyFailedReason, fmt.Sprintf("PersistentVolumeClaim %s cannot grow to %s: %v", claim.Name, want.String(), err))
		return
	}
	children.CountWrite(kind, "PersistentVolumeClaim", "update")
	r.Recorder.Eventf(pg, claim, corev1.EventTypeNormal, "StorageResizing", "Resize", "PersistentVolumeClaim %s grows to %s", claim.Name, want.String())
}

// restoring tells whether pg starts from a backup and has not started yet:
// only the first instance's first claim is made from it.
func restoring(pg *v1alpha1.PostgresCluster) bool {
	return pg.Spec.Bootstrap != nil && pg.Spec.Bootstrap.FromBackup != nil && pg.Status.CurrentPrimary == ""
}

// resizing tells whether a claim waits for its volume to grow to its
// request.
func resizing(claim *corev1.PersistentVolumeClaim) bool {
	if claim == nil {
		return false
	}
	want := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	have, ok := claim.Status.Capacity[corev1.ResourceStorage]
	return ok && have.Cmp(want) < 0
}
