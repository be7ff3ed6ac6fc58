package tenant

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
)

// The credentials Secret records the token it holds in annotations, so that
// the schedule of renewals survives restarts and status is derived from what
// is observed, never from the previous status.
const (
	issuedAtAnnotation      = "example.com/token-issued-at"
	expiresAtAnnotation     = "example.com/token-expires-at"
	expirationAnnotation    = "example.com/token-expiration"
	rotationTokenAnnotation = "example.com/rotation-token"
	// boundUIDAnnotation is the UID of the Secret the token is bound to:
	// the Secret's own, once the token is written. A Secret whose UID
	// differs was not filled by the operator.
	boundUIDAnnotation = "example.com/token-bound-uid"
	// serviceAccountUIDAnnotation is the UID of the ServiceAccount whose
	// token the Secret holds: the API server rejects a token whose
	// ServiceAccount was deleted, even when one of the same name took its
	// place, and a token of a ServiceAccount the spec no longer names is
	// not the one asked for.
	serviceAccountUIDAnnotation = "example.com/token-service-account-uid"
)

// DefaultTokenExpiration is a token's life when spec.credentials.expiration
// is unset (the CRD defaults it too).
const DefaultTokenExpiration = 24 * time.Hour

// DefaultCredentialsSecretName names the Secret when
// spec.credentials.secretName is unset.
const DefaultCredentialsSecretName = "tenant-kubeconfig"

// renewAtFraction of its life is when a token is renewed: early enough that
// a client that read the Secret just before has most of a day (with the
// default 24 h) left, and that an operator outage of a few hours costs no
// expired credentials.
const renewAtFraction = 0.8

// credentialsWant is what the spec asks of the credentials, or nil for none.
type credentialsWant struct {
	secretName     string
	serviceAccount string
	expiration     time.Duration
	rotationToken  string
	// serviceAccountUID is the UID of the ServiceAccount as observed, set
	// once it exists.
	serviceAccountUID types.UID
}

// wantedCredentials reads the spec: no credentials when it asks for none,
// or while the Tenant is suspended.
func wantedCredentials(t *tenantv1.Tenant) *credentialsWant {
	c := t.Spec.Credentials
	if c == nil || t.Spec.Suspend || ServiceAccountName(t) == "" {
		return nil
	}
	want := &credentialsWant{
		secretName:     c.SecretName,
		serviceAccount: ServiceAccountName(t),
		expiration:     DefaultTokenExpiration,
		rotationToken:  c.RotationToken,
	}
	if want.secretName == "" {
		want.secretName = DefaultCredentialsSecretName
	}
	if c.Expiration != nil && c.Expiration.Duration > 0 {
		want.expiration = c.Expiration.Duration
	}
	return want
}

// CredentialsSecretName is the Secret the spec asks for, or "" for none.
func CredentialsSecretName(t *tenantv1.Tenant) string {
	if t.Spec.Credentials == nil {
		return ""
	}
	if t.Spec.Credentials.SecretName == "" {
		return DefaultCredentialsSecretName
	}
	return t.Spec.Credentials.SecretName
}

// issuedToken is what a credentials Secret says of the token it holds.
type issuedToken struct {
	issuedAt      time.Time
	expiresAt     time.Time
	expiration    time.Duration
	rotationToken string
	// serviceAccountUID is empty in a record written before it was kept.
	serviceAccountUID types.UID
}

// renewAt is when the token is to be replaced: at renewAtFraction of its
// life.
func (tok issuedToken) renewAt() time.Time {
	life := tok.expiresAt.Sub(tok.issuedAt)
	return tok.issuedAt.Add(time.Duration(float64(life) * renewAtFraction))
}

// readIssuedToken reads the record of the token in secret. ok is false when
// the Secret holds no complete record of a token bound to itself: it was
// never filled, or someone changed it.
func readIssuedToken(secret *corev1.Secret) (tok issuedToken, ok bool) {
	a := secret.Annotations
	if a[boundUIDAnnotation] == "" || types.UID(a[boundUIDAnnotation]) != secret.UID || len(secret.Data[tenantv1.TenantKubeconfigKey]) == 0 {
		return issuedToken{}, false
	}
	var err error
	if tok.issuedAt, err = time.Parse(time.RFC3339, a[issuedAtAnnotation]); err != nil {
		return issuedToken{}, false
	}
	if tok.expiresAt, err = time.Parse(time.RFC3339, a[expiresAtAnnotation]); err != nil {
		return issuedToken{}, false
	}
	if tok.expiration, err = time.ParseDuration(a[expirationAnnotation]); err != nil {
		return issuedToken{}, false
	}
	if !tok.expiresAt.After(tok.issuedAt) {
		return issuedToken{}, false
	}
	tok.rotationToken = a[rotationTokenAnnotation]
	tok.serviceAccountUID = types.UID(a[serviceAccountUIDAnnotation])
	return tok, true
}

// tokenAnnotations is the record of tok for its Secret, whose UID is uid.
func tokenAnnotations(tok issuedToken, uid types.UID) map[string]string {
	return map[string]string{
		issuedAtAnnotation:          tok.issuedAt.UTC().Format(time.RFC3339),
		expiresAtAnnotation:         tok.expiresAt.UTC().Format(time.RFC3339),
		expirationAnnotation:        tok.expiration.String(),
		rotationTokenAnnotation:     tok.rotationToken,
		boundUIDAnnotation:          string(uid),
		serviceAccountUIDAnnotation: string(tok.serviceAccountUID),
	}
}

// credentialAction is what the credentials Secret needs.
type credentialAction string

const (
	// keepCredentials: the Secret holds a token that is not due.
	keepCredentials credentialAction = "Keep"
	// issueCredentials: there is no Secret; create one and a token for it.
	issueCredentials credentialAction = "Issue"
	// rotateCredentials: replace the Secret by a new object (a new UID, so
	// that every token bound to the old one is rejected) with a new token.
	rotateCredentials credentialAction = "Rotate"
)

// credentialDecision is the action and, for a rotation, why.
type credentialDecision struct {
	action credentialAction
	why    string
}

// decideCredentials decides what the Secret of want needs at now. secret is
// the operator's Secret, or nil when there is none.
func decideCredentials(now time.Time, want credentialsWant, secret *corev1.Secret) credentialDecision {
	if secret == nil {
		return credentialDecision{action: issueCredentials, why: "no Secret"}
	}
	tok, ok := readIssuedToken(secret)
	switch {
	case !ok:
		return credentialDecision{rotateCredentials, "the Secret holds no complete record of its token"}
	case tok.rotationToken != want.rotationToken:
		return credentialDecision{rotateCredentials, fmt.Sprintf("spec.credentials.rotationToken changed to %q", want.rotationToken)}
	case tok.expiration != want.expiration:
		return credentialDecision{rotateCredentials, fmt.Sprintf("spec.credentials.expiration changed to %s", want.expiration)}
	// A record written before the UID was kept says nothing of it: such a
	// token is kept until it is due, rather than every Secret replaced at
	// once on the operator's upgrade.
	case tok.serviceAccountUID != "" && tok.serviceAccountUID != want.serviceAccountUID:
		return credentialDecision{rotateCredentials, fmt.Sprintf("the token is of another ServiceAccount than %s (renamed, or deleted and made again)", want.serviceAccount)}
	case !now.Before(tok.renewAt()):
		return credentialDecision{rotateCredentials, fmt.Sprintf("the token reached %d%% of its life (expires %s)", int(renewAtFraction*100), tok.expiresAt.UTC().Format(time.RFC3339))}
	}
	return credentialDecision{action: keepCredentials}
}

// untilRenewal is how long after now the token of tok is to be renewed; at
// least a second, so that a clock behind the API server's does not spin.
func untilRenewal(now time.Time, tok issuedToken) time.Duration {
	return max(tok.renewAt().Sub(now), time.Second)
}

// Kubeconfig is the kubeconfig of a ServiceAccount token: one cluster
// (server, and its CA when known), one user with the token, one context in
// namespace.
func Kubeconfig(server string, caData []byte, namespace, user, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["tenant"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = "tenant"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("encode kubeconfig: %w", err)
	}
	return data, nil
}
