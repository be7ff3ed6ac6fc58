package postgrescluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/children"
	"example.com/platform-operator/internal/pgspec"
)

// userCertificateRecheck is how long a cluster serving a certificate its
// user brings goes without reading that Secret again: the operator's cache
// holds only the Secrets it made, so it sees a renewal (cert-manager's,
// long before the certificate ends) after this at the latest.
// A Secret missing or failing the check is read again sooner: cert-manager
// issues a certificate a moment after the cluster that names it is made.
const (
	userCertificateRecheck = 5 * time.Minute
	userCertificateRetry   = 15 * time.Second
)

// requiredServerHosts are the names a server certificate the user brings
// must cover: each instance's host, by which the standbys verify the
// primary and the backup and drill Jobs connect, and the rw and ro
// Services', by which the applications do.
func requiredServerHosts(pg *v1alpha1.PostgresCluster, clusterDomain string) []string {
	var hosts []string
	for n := 1; n <= int(pg.Spec.Instances); n++ {
		hosts = append(hosts, pgspec.InstanceHost(pgspec.InstanceName(pg.Name, n), pg.Name, pg.Namespace, clusterDomain))
	}
	for _, service := range []string{pgspec.WriteService(pg.Name), pgspec.ReadService(pg.Name)} {
		hosts = append(hosts, pgspec.ServiceHost(service, pg.Namespace, clusterDomain))
	}
	return hosts
}

// userCertificateProblem says what keeps the Secret of a user's server
// certificate from being served, "" when nothing does: a key of
// cert-manager's format missing, tls.crt and tls.key not a pair, a
// certificate that is not yet or no longer valid at now, that does not
// chain to ca.crt (through the intermediates tls.crt carries) for server
// authentication, or does not cover each of hosts.
func userCertificateProblem(secret *corev1.Secret, hosts []string, now time.Time) string {
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, pgspec.CACertKey} {
		if len(secret.Data[key]) == 0 {
			return fmt.Sprintf("it has no %s key", key)
		}
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Sprintf("its tls.crt and tls.key are not a certificate and its key: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return fmt.Sprintf("its tls.crt does not parse: %v", err)
	}
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Sprintf("its certificate ended at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Sprintf("its certificate is valid only from %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data[pgspec.CACertKey]) {
		return "its ca.crt holds no PEM certificate"
	}
	intermediates := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if cert, err := x509.ParseCertificate(der); err == nil {
			intermediates.AddCert(cert)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: intermediates, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return fmt.Sprintf("its certificate does not chain to its ca.crt for server authentication: %v", err)
	}
	var missing []string
	for _, host := range hosts {
		if leaf.VerifyHostname(host) != nil {
			missing = append(missing, host)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("its certificate does not cover %s (it names %s)", strings.Join(missing, ", "), strings.Join(leaf.DNSNames, ", "))
	}
	return ""
}

// ensureUserTLS serves the certificate of the Secret spec.tls names: it
// copies it, checked, into CLUSTER-server, which the instance managers
// read and reload. A Secret that is missing or fails the check is
// reported, and the instances keep what they serve.
func (r *Reconciler) ensureUserTLS(ctx context.Context, pg *v1alpha1.PostgresCluster, out *outcome) tlsState {
	name := pg.Spec.TLS.ServerCertSecret
	live, err := r.ownSecret(ctx, pg, pgspec.ServerSecret(pg.Name))
	if err != nil {
		reportSecretError(err, out)
		return tlsState{}
	}
	// Until the user's certificate is served, clients verify what is.
	state := tlsState{renewIn: userCertificateRecheck, status: servedStatus(live)}
	if live != nil {
		state.caCert = live.Data[pgspec.CACertKey]
	}
	now := r.Clock.Now()
	last, ok := r.userSecretReads.last(pg.UID)
	if !userSecretReadDue(last, ok, name, pg.Generation, live, now) {
		state.renewIn = last.at.Add(userCertificateRecheck).Sub(now)
		return state
	}
	user := &corev1.Secret{}
	switch err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: pg.Namespace, Name: name}, user); {
	case apierrors.IsNotFound(err):
		out.Report(v1alpha1.PostgresSecretMissingReason, fmt.Sprintf("Secret %s named by spec.tls.serverCertSecret does not exist", name))
		state.renewIn = userCertificateRetry
		return state
	case err != nil:
		out.Add(fmt.Errorf("get Secret %s: %w", name, err), false)
		return state
	}
	if why := userCertificateProblem(user, requiredServerHosts(pg, r.ClusterDomain), now); why != "" {
		out.Report(v1alpha1.PostgresCertificateInvalidReason, fmt.Sprintf("Secret %s named by spec.tls.serverCertSecret is not served: %s", name, why))
		state.renewIn = userCertificateRetry
		return state
	}
	desired := DesiredServerSecret(pg, keyPair{cert: user.Data[corev1.TLSCertKey], key: user.Data[corev1.TLSPrivateKeyKey]}, user.Data[pgspec.CACertKey])
	switch {
	case live == nil:
		if _, err := r.createOwnSecret(ctx, pg, desired); err != nil {
			reportSecretError(err, out)
			return state
		}
	case !maps.EqualFunc(live.Data, desired.Data, bytes.Equal):
		update := live.DeepCopy()
		update.Data = desired.Data
		if err := r.Client.Update(ctx, update); err != nil {
			out.Add(fmt.Errorf("put the certificate of Secret %s into Secret %s: %w", name, live.Name, err), false)
			return state
		}
		children.CountWrite(kind, "Secret", "update")
		r.Recorder.Eventf(pg, nil, corev1.EventTypeNormal, "CertificateReplaced", "Replace",
			"Secret %s holds the certificate of Secret %s (spec.tls.serverCertSecret)", live.Name, name)
	}
	r.userSecretReads.remember(pg.UID, userSecretRead{secret: name, generation: pg.Generation, served: servedDigest(desired), at: now})
	state.caCert, state.status = user.Data[pgspec.CACertKey], servedStatus(desired)
	return state
}
