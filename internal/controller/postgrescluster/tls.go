package postgrescluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

// tlsState is what ensureTLS leaves for the other phases: the CA's
// certificate (nil when there is none yet), for the application's Secret,
// when the server certificate is due for renewal, and what the status
// says of the certificate served (nil when none is).
type tlsState struct {
	caCert  []byte
	renewIn time.Duration
	status  *v1alpha1.PostgresTLSStatus
}

// servedStatus is what the status says of the server certificate of
// Secret s (CLUSTER-server), nil when it holds none that parses.
func servedStatus(s *corev1.Secret) *v1alpha1.PostgresTLSStatus {
	if s == nil {
		return nil
	}
	cert, err := parseCert(s.Data[corev1.TLSCertKey])
	if err != nil {
		return nil
	}
	return &v1alpha1.PostgresTLSStatus{Issuer: cert.Issuer.CommonName, NotAfter: &metav1.Time{Time: cert.NotAfter}}
}

// ensureTLS makes the cluster's CA once, and the instances' server
// certificate, which it issues again when serverRenewal says so: the
// instance managers read the new one and reload. Same-named Secrets the
// operator did not make are refused, as for the credentials. A cluster
// whose user brings the certificate (spec.tls) serves that one instead.
func (r *Reconciler) ensureTLS(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) tlsState {
	if pg.Spec.TLS != nil {
		return r.ensureUserTLS(ctx, pg, out)
	}
	fail := func(err error) tlsState {
		reportSecretError(err, out)
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
		if caSecret, err = r.createOwnSecret(ctx, pg, DesiredCASecret(pg, ca)); err != nil {
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
			desired, err = r.createOwnSecret(ctx, pg, desired)
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
	state.status = servedStatus(live)
	return state
}
