package postgrescluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

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
//
// The generated application Secret carries the CA's certificate, caCert:
// it waits for the CA (nil while there is none).
func (r *Reconciler) ensureSecrets(ctx context.Context, pg *v1alpha1.PostgresCluster, caCert []byte, out *outcome) credentials {
	creds := credentials{appSecret: pgspec.AppSecret(pg)}
	for i, s := range DesiredGeneratedSecrets(pg, "", r.ClusterDomain, caCert) {
		if s.Name == pgspec.GeneratedAppSecret(pg.Name) && len(caCert) == 0 {
			continue
		}
		build := func(p string) *corev1.Secret { return DesiredGeneratedSecrets(pg, p, r.ClusterDomain, caCert)[i] }
		live, err := r.createSecretOnce(ctx, pg, build)
		var notOurs notOursError
		switch {
		case errors.As(err, &notOurs):
			// A person's to resolve, not an error to retry at once; the
			// cluster looks again every 30 s while it conflicts.
			out.conflict = true
			out.report(v1alpha1.PostgresConflictReason, err.Error())
			continue
		case err != nil:
			out.Add(err, false)
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
	r.checkStoreSecrets(ctx, pg, out)
	return creds
}

// checkStoreSecrets checks the Secrets of the object stores the user
// named, which the instances' pods read their keys from: a pod whose
// Secret lacks a key does not start, so the status says which first.
func (r *Reconciler) checkStoreSecrets(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) {
	type need struct{ field, secret, key string }
	var needs []need
	add := func(field string, store *v1alpha1.PostgresObjectStore) {
		needs = append(needs,
			need{field + ".credentialsSecret", store.CredentialsSecret, v1alpha1.ObjectStoreAccessKeyIDKey},
			need{field + ".credentialsSecret", store.CredentialsSecret, v1alpha1.ObjectStoreSecretAccessKeyKey})
		if store.CASecret != "" {
			needs = append(needs, need{field + ".caSecret", store.CASecret, v1alpha1.ObjectStoreCAKey})
		}
	}
	if b := pg.Spec.Backup; b != nil {
		add("spec.backup.objectStore", &b.ObjectStore)
	}
	if b := pg.Spec.Bootstrap; b != nil && b.FromBackup != nil && b.FromBackup.ObjectStore != nil {
		add("spec.bootstrap.fromBackup.objectStore", b.FromBackup.ObjectStore)
	}
	read := map[string]*corev1.Secret{}
	for _, n := range needs {
		secret, seen := read[n.secret]
		if !seen {
			secret = &corev1.Secret{}
			err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: n.secret}, secret)
			switch {
			case apierrors.IsNotFound(err):
				secret = nil
			case err != nil:
				out.Add(fmt.Errorf("get Secret %s: %w", n.secret, err), false)
				return
			}
			read[n.secret] = secret
		}
		switch {
		case secret == nil:
			out.report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by %s does not exist", n.secret, n.field))
			return
		case len(secret.Data[n.key]) == 0:
			out.report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by %s has no %s key", n.secret, n.field, n.key))
			return
		}
	}
}

// notOursError is an object of a name the cluster's pods would use that
// the operator did not make for it: never borrowed.
type notOursError struct{ kind, name, cluster string }

func (e notOursError) Error() string {
	return fmt.Sprintf("%s %s exists and is not PostgresCluster %s's: its pods would use it, so none starts; rename or delete it, or name the cluster otherwise", e.kind, e.name, e.cluster)
}

// createSecretOnce creates the Secret that build makes unless it exists;
// it returns the Secret, nil on a conflict (reported in out by the caller
// through the error).
func (r *Reconciler) createSecretOnce(ctx context.Context, pg *v1alpha1.PostgresCluster, build func(string) *corev1.Secret) (*corev1.Secret, error) {
	probe := build("")
	live := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(probe), live)
	switch {
	case err == nil && controlledBy(live, pg):
		return live, nil
	case err == nil:
		return nil, notOursError{kind: "Secret", name: probe.Name, cluster: pg.Name}
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
			return nil, notOursError{kind: "Secret", name: secret.Name, cluster: pg.Name}
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
		out.Add(fmt.Errorf("get Secret %s: %w", creds.appSecret, err), false)
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
