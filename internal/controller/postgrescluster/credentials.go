package postgrescluster

import (
	"bytes"
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
		if err != nil {
			reportSecretError(err, out)
			continue
		}
		if live != nil && live.Name == pgspec.GeneratedAppSecret(pg.Name) {
			if err := r.completeAppSecret(ctx, pg, live, caCert); err != nil {
				out.Add(err, false)
				out.Report(v1alpha1.PostgresApplyFailedReason, err.Error())
			}
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
			out.Report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by %s does not exist", n.secret, n.field))
			return
		case len(secret.Data[n.key]) == 0:
			out.Report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by %s has no %s key", n.secret, n.field, n.key))
			return
		}
	}
}

// completeAppSecret gives the application Secret what a client needs to
// verify the server: the certificate of the CA that signed what the
// instances serve (which changes when spec.tls brings a certificate or
// stops bringing one), and URIs with sslmode=verify-full. Its username,
// password, host and database stay as they are, a password a person
// changed included.
func (r *Reconciler) completeAppSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, live *corev1.Secret, caCert []byte) error {
	if len(caCert) == 0 || bytes.Equal(live.Data[CACertKey], caCert) {
		return nil
	}
	had := len(live.Data[CACertKey]) > 0
	db := initDB(pg)
	or := func(key, fallback string) string {
		if v := string(live.Data[key]); v != "" {
			return v
		}
		return fallback
	}
	keys := connectionKeys(or(UsernameKey, db.Owner), string(live.Data[PasswordKey]), or(HostKey, writeHost(pg, r.ClusterDomain)), or(DBNameKey, db.Database))
	update := live.DeepCopy()
	if update.Data == nil {
		update.Data = map[string][]byte{}
	}
	update.Data[CACertKey] = caCert
	update.Data[URIKey] = []byte(keys[URIKey])
	update.Data[JDBCURIKey] = []byte(keys[JDBCURIKey])
	if err := r.Client.Update(ctx, update); err != nil {
		return fmt.Errorf("add the CA to Secret %s: %w", live.Name, err)
	}
	children.CountWrite(kind, "Secret", "update")
	if had {
		r.Recorder.Eventf(pg, live, corev1.EventTypeNormal, "SecretCAChanged", "Update",
			"Secret %s's %s is the CA of the certificate the instances now serve; its password is unchanged", live.Name, CACertKey)
	} else {
		r.Recorder.Eventf(pg, live, corev1.EventTypeNormal, "SecretCompleted", "Update",
			"Secret %s gains the cluster's CA (%s) and URIs with sslmode=verify-full; its password is unchanged", live.Name, CACertKey)
	}
	*live = *update
	return nil
}

// notOursError is an object of a name the cluster's pods would use that
// the operator did not make for it: never borrowed.
type notOursError struct{ kind, name, cluster string }

func (e notOursError) Error() string {
	return fmt.Sprintf("%s %s exists and is not PostgresCluster %s's: its pods would use it, so none starts; rename or delete it, or name the cluster otherwise", e.kind, e.name, e.cluster)
}

// createSecretOnce creates the Secret that build makes unless it exists;
// it returns the Secret, or a notOursError when a Secret of that name is
// not pg's (reported in out by the caller).
func (r *Reconciler) createSecretOnce(ctx context.Context, pg *v1alpha1.PostgresCluster, build func(string) *corev1.Secret) (*corev1.Secret, error) {
	probe := build("")
	live, err := r.ownSecret(ctx, pg, probe.Name)
	if err != nil || live != nil {
		return live, err
	}
	password, err := newPassword()
	if err != nil {
		return nil, err
	}
	return r.createOwnSecret(ctx, pg, build(password))
}

// ownSecret is pg's Secret of that name, nil when there is none, or a
// notOursError when the Secret of that name is not pg's.
func (r *Reconciler) ownSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, name string) (*corev1.Secret, error) {
	live := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: name}, live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	case !controlledBy(live, pg):
		return nil, notOursError{kind: "Secret", name: name, cluster: pg.Name}
	}
	return live, nil
}

// createOwnSecret creates a Secret ownSecret found missing. When it exists
// after all, the API server says whose it is: the cache holds only the
// operator's Secrets, and may not have seen one just made.
func (r *Reconciler) createOwnSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, secret *corev1.Secret) (*corev1.Secret, error) {
	err := r.Client.Create(ctx, secret)
	if err == nil {
		children.CountWrite(kind, "Secret", "create")
		return secret, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	live := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(secret), live); err != nil {
		return nil, fmt.Errorf("get Secret %s, which exists: %w", secret.Name, err)
	}
	if !controlledBy(live, pg) {
		return nil, notOursError{kind: "Secret", name: secret.Name, cluster: pg.Name}
	}
	return live, nil
}

// reportSecretError puts an error of ownSecret or createOwnSecret into
// out: a Secret that is not pg's is a person's to resolve, not an error to
// retry at once, and holds the pods, which would use it; the cluster looks
// again every 30 s while it conflicts.
func reportSecretError(err error, out *outcome) {
	var notOurs notOursError
	if errors.As(err, &notOurs) {
		out.conflict = true
		out.Report(v1alpha1.PostgresConflictReason, err.Error())
		return
	}
	out.Add(err, false)
	out.Report(v1alpha1.PostgresApplyFailedReason, err.Error())
}

// checkUserSecret checks the application Secret the user named, read from
// the API server: the cache holds only the operator's Secrets.
func (r *Reconciler) checkUserSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, creds *credentials, out *outcome) {
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: creds.appSecret}, secret)
	switch {
	case apierrors.IsNotFound(err):
		out.Report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by spec.bootstrap.initdb.secretName does not exist", creds.appSecret))
		return
	case err != nil:
		out.Add(fmt.Errorf("get Secret %s: %w", creds.appSecret, err), false)
		return
	}
	owner := initDB(pg).Owner
	switch {
	case len(secret.Data[PasswordKey]) == 0:
		out.Report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s has no %s key", creds.appSecret, PasswordKey))
	case string(secret.Data[UsernameKey]) != owner:
		out.Report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s: its %s must be %q, the owner of spec.bootstrap.initdb", creds.appSecret, UsernameKey, owner))
	default:
		creds.appVersion = secret.ResourceVersion
	}
}
