package postgrescluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

// tlsState is what ensureTLS leaves for the other phases: the CA's
// certificate (nil when there is none yet), for the application's Secret,
// and when the server certificate is due for renewal.
type tlsState struct {
	caCert  []byte
	renewIn time.Duration
}

// ensureTLS makes the cluster's CA once, and the instances' server
// certificate, which it issues again when serverRenewal says so: the
// instance managers read the new one and reload. Same-named Secrets the
// operator did not make are refused, as for the credentials.
func (r *Reconciler) ensureTLS(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) tlsState {
	fail := func(err error) tlsState {
		out.Add(err, false)
		out.report(v1alpha1.PostgresApplyFailedReason, err.Error())
		return tlsState{}
	}
	now := r.Clock.Now()
	caSecret, err := r.ownSecret(ctx, pg, pgspec.CASecret(pg.Name))
	if err != nil {
		return fail(err)
	}
	if caSecret == nil {
		ca, err := newCA(pg.Name, now)
		if err != nil {
			return fail(err)
		}
		caSecret = DesiredCASecret(pg, ca)
		if err := r.createSecret(ctx, pg, caSecret); err != nil {
			return fail(err)
		}
	}
	ca := keyPair{cert: caSecret.Data[pgspec.CACertKey], key: caSecret.Data[pgspec.CAKeyKey]}
	if _, _, err := parsePair(ca); err != nil {
		return fail(fmt.Errorf("Secret %s does not hold a CA: %w", caSecret.Name, err))
	}
	state := tlsState{caCert: ca.cert}

	hosts := pgspec.ServerHosts(pg.Name, pg.Namespace, r.ClusterDomain)
	live, err := r.ownSecret(ctx, pg, pgspec.ServerSecret(pg.Name))
	if err != nil {
		return fail(err)
	}
	why := "it does not exist"
	if live != nil {
		why = serverRenewal(live, ca.cert, hosts, now)
	}
	if why != "" {
		server, err := newServerCert(ca, hosts, now)
		if err != nil {
			return fail(err)
		}
		desired := DesiredServerSecret(pg, server, ca.cert)
		if live == nil {
			err = r.createSecret(ctx, pg, desired)
		} else {
			update := live.DeepCopy()
			update.Data = desired.Data
			if err = r.Client.Update(ctx, update); err == nil {
				children.CountWrite(kind, "Secret", "update")
				r.Recorder.Eventf(pg, nil, corev1.EventTypeNormal, "CertificateRenewed", "Renew",
					"Secret %s holds a new server certificate: %s", desired.Name, why)
			} else {
				err = fmt.Errorf("renew the certificate of Secret %s: %w", desired.Name, err)
			}
		}
		if err != nil {
			return fail(err)
		}
		live = desired
	}
	if cert, err := parseCert(live.Data[corev1.TLSCertKey]); err == nil {
		state.renewIn = max(renewAt(cert).Sub(now), time.Second)
	}
	return state
}

// ownSecret is the Secret name of pg, nil when there is none; an error
// when a Secret of that name is not pg's.
func (r *Reconciler) ownSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, name string) (*corev1.Secret, error) {
	live := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: name}, live)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get Secret %s: %w", name, err)
	case !controlledBy(live, pg):
		return nil, fmt.Errorf("Secret %s exists and is not PostgresCluster %s's: rename or delete it", name, pg.Name)
	}
	return live, nil
}

// createSecret creates a Secret ownSecret found missing.
func (r *Reconciler) createSecret(ctx context.Context, pg *v1alpha1.PostgresCluster, secret *corev1.Secret) error {
	if err := r.Client.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache: it is not labelled as the operator's.
			return fmt.Errorf("Secret %s exists and is not PostgresCluster %s's: rename or delete it", secret.Name, pg.Name)
		}
		return fmt.Errorf("create Secret %s: %w", secret.Name, err)
	}
	children.CountWrite(kind, "Secret", "create")
	return nil
}
