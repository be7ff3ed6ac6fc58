package tenant

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/platform"
)

// ensureCredentials keeps the credentials Secret of t: a kubeconfig with a
// token of the tenant's ServiceAccount bound to the Secret itself, renewed
// at 80 % of its life, and replaced (a new Secret object, so that every token
// bound to the old one is rejected) on renewal or when the spec's
// rotationToken changes. A Secret the spec no longer asks for (suspend,
// credentials removed, another name) is deleted, which revokes its token.
func (r *Reconciler) ensureCredentials(ctx context.Context, t *tenantv1.Tenant, homeHeld bool, saUID types.UID, saProblem *cause, out *outcome) credentialObservation {
	obs := credentialObservation{requested: t.Spec.Credentials != nil, secretName: CredentialsSecretName(t)}
	want := wantedCredentials(t)
	if !homeHeld {
		obs.waitingForHome = want != nil
		return obs
	}
	home := HomeNamespace(t)
	keep := func(o client.Object) bool { return want != nil && o.GetName() == want.secretName }
	if _, err := r.Children.Prune(ctx, t, &corev1.SecretList{}, home, tenantSelector(t), keep); err != nil {
		out.Add(err, false)
		obs.problem = problemOf(err)
		return obs
	}
	if want == nil {
		return obs
	}
	if saUID == "" {
		obs.problem = saProblem
		return obs
	}
	want.serviceAccountUID = saUID

	key := types.NamespacedName{Namespace: home, Name: want.secretName}
	secret, c := r.ownSecret(ctx, t, key, r.Client)
	if c != nil {
		out.conflict = out.conflict || c.reason == tenantv1.CredentialsConflictReason
		if c.reason != tenantv1.CredentialsConflictReason {
			out.Add(fmt.Errorf("%s", c.message), false)
		}
		obs.problem = c
		return obs
	}
	now := r.Clock.Now()
	decision := decideCredentials(now, *want, secret)
	if decision.action == rotateCredentials {
		if _, ok := readIssuedToken(secret); !ok {
			// The cache may not show the operator's own last write yet:
			// decide again on what the API server holds.
			secret, c = r.ownSecret(ctx, t, key, r.APIReader)
			if c != nil {
				out.Add(fmt.Errorf("%s", c.message), false)
				obs.problem = c
				return obs
			}
			decision = decideCredentials(now, *want, secret)
		}
	}

	switch decision.action {
	case keepCredentials:
		tok, _ := readIssuedToken(secret)
		obs.token = &tok
		return obs
	case rotateCredentials:
		uid, version := secret.UID, secret.ResourceVersion
		err := r.Client.Delete(ctx, secret, client.Preconditions{UID: &uid, ResourceVersion: &version})
		if client.IgnoreNotFound(err) != nil {
			out.Add(fmt.Errorf("delete Secret %s to rotate its token: %w", key, err), false)
			obs.problem = problemOf(err)
			return obs
		}
		children.CountWrite(tenantKind, "Secret", "delete")
	}
	tok, c, err := r.issue(ctx, t, key, *want, now)
	if err != nil {
		out.Add(err, false)
	}
	if c != nil {
		out.conflict = out.conflict || c.reason == tenantv1.CredentialsConflictReason
		obs.problem = c
		return obs
	}
	obs.token = tok
	if decision.action == rotateCredentials {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "CredentialsRotated", "Rotate",
			"Secret %s replaced with a new token of ServiceAccount %s, valid until %s, because %s; tokens of the old Secret no longer work",
			key, want.serviceAccount, tok.expiresAt.UTC().Format(time.RFC3339), decision.why)
	} else {
		r.Recorder.Eventf(t, nil, corev1.EventTypeNormal, "CredentialsIssued", "Issue",
			"Secret %s holds a kubeconfig for ServiceAccount %s with a token valid until %s",
			key, want.serviceAccount, tok.expiresAt.UTC().Format(time.RFC3339))
	}
	return obs
}

// ownSecret reads the Secret of key with reader: nil when there is none, a
// conflict cause when it is someone else's.
func (r *Reconciler) ownSecret(ctx context.Context, t *tenantv1.Tenant, key types.NamespacedName, reader client.Reader) (*corev1.Secret, *cause) {
	secret := &corev1.Secret{}
	err := reader.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, problemOf(fmt.Errorf("get Secret %s: %w", key, err))
	case !metav1.IsControlledBy(secret, t) || !holdsNamespace(t)(secret):
		return nil, secretConflict(key)
	}
	return secret, nil
}

func secretConflict(key types.NamespacedName) *cause {
	return problem(tenantv1.CredentialsConflictReason, fmt.Sprintf(
		"Secret %s already exists and is not the Tenant's; the operator leaves it untouched. Delete it, or set another spec.credentials.secretName", key))
}

// issue creates the credentials Secret, asks the API server for a token
// bound to it, and writes the kubeconfig into it. The Secret is created
// first because a token is bound to an object's UID. Should the last step
// fail, the Secret holds no record of a token and is replaced next time.
func (r *Reconciler) issue(ctx context.Context, t *tenantv1.Tenant, key types.NamespacedName, want credentialsWant, now time.Time) (*issuedToken, *cause, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: key.Namespace, Labels: tenantLabels(t),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(t, tenantv1.GroupVersion.WithKind("Tenant"))},
		},
		Type: corev1.SecretTypeOpaque,
	}
	switch err := r.Client.Create(ctx, secret, client.FieldOwner(platform.Name)); {
	case apierrors.IsAlreadyExists(err):
		existing, c := r.ownSecret(ctx, t, key, r.APIReader)
		switch {
		case c != nil:
			return nil, c, nil
		case existing == nil:
			// Gone again since (a finalizer held it): the next reconcile
			// makes it.
			err = fmt.Errorf("secret %s existed at its creation and is gone", key)
		default:
			// Ours, and not yet in the cache: the next reconcile sees it.
			err = fmt.Errorf("secret %s exists but is not in the cache yet (resourceVersion %s)", key, existing.GetResourceVersion())
		}
		return nil, &cause{reason: tenantv1.TenantProgressingReason, message: "The token is being issued"}, err
	case err != nil:
		err = fmt.Errorf("create Secret %s: %w", key, err)
		return nil, problemOf(err), err
	}
	children.CountWrite(tenantKind, "Secret", "create")

	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(want.expiration / time.Second)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
	}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: want.serviceAccount, Namespace: key.Namespace}}
	if err := r.Client.SubResource("token").Create(ctx, sa, request); err != nil {
		err = fmt.Errorf("request a token of ServiceAccount %s/%s: %w", key.Namespace, want.serviceAccount, err)
		return nil, problemOf(err), err
	}
	tok := issuedToken{issuedAt: now, expiresAt: request.Status.ExpirationTimestamp.Time, expiration: want.expiration, rotationToken: want.rotationToken,
		serviceAccountUID: want.serviceAccountUID}
	if !tok.expiresAt.After(tok.issuedAt) {
		// The operator's clock is ahead of the API server's: count the
		// life the API server granted back from its expiry.
		tok.issuedAt = tok.expiresAt.Add(-want.expiration)
	}
	tok.issuedAt = tok.issuedAt.Truncate(time.Second)

	user := fmt.Sprintf("system:serviceaccount:%s:%s", key.Namespace, want.serviceAccount)
	kubeconfig, err := Kubeconfig(r.APIServerURL, r.CAData, key.Namespace, user, request.Status.Token)
	if err != nil {
		return nil, problemOf(err), err
	}
	filled := secret.DeepCopy()
	filled.Annotations = tokenAnnotations(tok, secret.UID)
	filled.Data = map[string][]byte{
		tenantv1.TenantKubeconfigKey: kubeconfig,
		tenantv1.TenantTokenKey:      []byte(request.Status.Token),
		tenantv1.TenantNamespaceKey:  []byte(key.Namespace),
	}
	if len(r.CAData) > 0 {
		filled.Data[tenantv1.TenantCAKey] = r.CAData
	}
	patch := client.MergeFromWithOptions(secret, client.MergeFromWithOptimisticLock{})
	if err := r.Client.Patch(ctx, filled, patch, client.FieldOwner(platform.Name)); err != nil {
		err = fmt.Errorf("write the token into Secret %s: %w", key, err)
		return nil, problemOf(err), err
	}
	children.CountWrite(tenantKind, "Secret", "issue")
	return &tok, nil, nil
}
