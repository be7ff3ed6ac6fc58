package tenant

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"

	tenantv1 "example.com/platform-operator/api/v1alpha1"
)

var issued = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// serviceAccountUID is the UID of the tenant's ServiceAccount in these
// tests.
const serviceAccountUID = types.UID("sa-1")

// secretWith is a credentials Secret filled by the operator at issuedAt for
// life, for rotationToken, with a token of the ServiceAccount of UID
// serviceAccountUID.
func secretWith(issuedAt time.Time, life time.Duration, rotationToken string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-kubeconfig", Namespace: "team-a", UID: "secret-1"},
		Data:       map[string][]byte{tenantv1.TenantKubeconfigKey: []byte("kubeconfig")},
	}
	s.Annotations = tokenAnnotations(issuedToken{issuedAt: issuedAt, expiresAt: issuedAt.Add(life), expiration: life, rotationToken: rotationToken,
		serviceAccountUID: serviceAccountUID}, s.UID)
	return s
}

func TestDecideCredentials(t *testing.T) {
	day := 24 * time.Hour
	want := credentialsWant{secretName: "tenant-kubeconfig", serviceAccount: "tenant", expiration: day, rotationToken: "r1", serviceAccountUID: serviceAccountUID}
	wantWith := func(change func(*credentialsWant)) credentialsWant {
		w := want
		change(&w)
		return w
	}
	tests := []struct {
		name   string
		now    time.Time
		want   credentialsWant
		secret *corev1.Secret
		action credentialAction
	}{
		{"no Secret: issue", issued, want, nil, issueCredentials},
		{"fresh token: keep", issued.Add(time.Hour), want, secretWith(issued, day, "r1"), keepCredentials},
		{"just before 80 %: keep", issued.Add(19*time.Hour + 11*time.Minute), want, secretWith(issued, day, "r1"), keepCredentials},
		{"at 80 % of its life: rotate", issued.Add(19*time.Hour + 12*time.Minute), want, secretWith(issued, day, "r1"), rotateCredentials},
		{"expired: rotate", issued.Add(2 * day), want, secretWith(issued, day, "r1"), rotateCredentials},
		{"rotationToken changed: rotate", issued.Add(time.Hour), wantWith(func(w *credentialsWant) { w.rotationToken = "r2" }), secretWith(issued, day, "r1"), rotateCredentials},
		{"expiration changed: rotate", issued.Add(time.Hour), wantWith(func(w *credentialsWant) { w.expiration = time.Hour }), secretWith(issued, day, "r1"), rotateCredentials},
		{"ServiceAccount renamed, or deleted and made again: rotate", issued.Add(time.Hour),
			wantWith(func(w *credentialsWant) { w.serviceAccountUID = "sa-2" }), secretWith(issued, day, "r1"), rotateCredentials},
		{"record written before the ServiceAccount's UID was kept: keep", issued.Add(time.Hour), want, func() *corev1.Secret {
			s := secretWith(issued, day, "r1")
			delete(s.Annotations, serviceAccountUIDAnnotation)
			return s
		}(), keepCredentials},
		{"empty Secret (issue interrupted): rotate", issued, want, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: "secret-1"}}, rotateCredentials},
		{"record copied from another Secret: rotate", issued.Add(time.Hour), want, func() *corev1.Secret {
			s := secretWith(issued, day, "r1")
			s.UID = "secret-2"
			return s
		}(), rotateCredentials},
		{"kubeconfig removed: rotate", issued.Add(time.Hour), want, func() *corev1.Secret {
			s := secretWith(issued, day, "r1")
			s.Data = nil
			return s
		}(), rotateCredentials},
		{"garbled record: rotate", issued.Add(time.Hour), want, func() *corev1.Secret {
			s := secretWith(issued, day, "r1")
			s.Annotations[expiresAtAnnotation] = "soon"
			return s
		}(), rotateCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideCredentials(tt.now, tt.want, tt.secret)
			NewWithT(t).Expect(got.action).To(Equal(tt.action), got.why)
		})
	}
}

// The renewal schedule as a reconciler meets it: on a fake clock, a 24 h
// token issued now is kept and requeued for 19 h 12 min later, kept until
// then, and rotated at that moment.
func TestCredentialScheduleOnAFakeClock(t *testing.T) {
	g := NewWithT(t)
	clock := clocktesting.NewFakeClock(issued)
	want := credentialsWant{expiration: 24 * time.Hour, serviceAccountUID: serviceAccountUID}
	secret := secretWith(clock.Now(), want.expiration, "")
	tok, ok := readIssuedToken(secret)
	g.Expect(ok).To(BeTrue())

	g.Expect(untilRenewal(clock.Now(), tok)).To(Equal(19*time.Hour + 12*time.Minute))
	g.Expect(decideCredentials(clock.Now(), want, secret).action).To(Equal(keepCredentials))

	clock.Step(19 * time.Hour)
	g.Expect(untilRenewal(clock.Now(), tok)).To(Equal(12 * time.Minute))
	g.Expect(decideCredentials(clock.Now(), want, secret).action).To(Equal(keepCredentials))

	clock.Step(12 * time.Minute)
	g.Expect(decideCredentials(clock.Now(), want, secret).action).To(Equal(rotateCredentials))
	g.Expect(untilRenewal(clock.Now(), tok)).To(Equal(time.Second), "never a requeue in the past")

	// A 10-minute token (the shortest the API server issues) is renewed
	// after 8 minutes.
	short := secretWith(clock.Now(), 10*time.Minute, "")
	shortTok, _ := readIssuedToken(short)
	g.Expect(untilRenewal(clock.Now(), shortTok)).To(Equal(8 * time.Minute))
}

func TestWantedCredentials(t *testing.T) {
	g := NewWithT(t)
	g.Expect(wantedCredentials(testTenant())).To(BeNil())
	g.Expect(wantedCredentials(testTenant(withCredentials, func(t *tenantv1.Tenant) { t.Spec.Suspend = true }))).To(BeNil(), "suspended")

	w := wantedCredentials(testTenant(withCredentials, func(t *tenantv1.Tenant) {
		t.Spec.Credentials.Expiration = &metav1.Duration{Duration: time.Hour}
		t.Spec.Credentials.RotationToken = "2026-12"
	}))
	g.Expect(*w).To(Equal(credentialsWant{secretName: "tenant-kubeconfig", serviceAccount: "tenant", expiration: time.Hour, rotationToken: "2026-12"}))
	g.Expect(wantedCredentials(testTenant(withCredentials)).expiration).To(Equal(24*time.Hour), "24 h by default")
}

func TestKubeconfig(t *testing.T) {
	g := NewWithT(t)
	data, err := Kubeconfig("https://api.example.com:6443", []byte("CA"), "team-a", "system:serviceaccount:team-a:tenant", "TOKEN")
	g.Expect(err).NotTo(HaveOccurred())

	cfg, err := clientcmd.Load(data)
	g.Expect(err).NotTo(HaveOccurred())
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rest.Host).To(Equal("https://api.example.com:6443"))
	g.Expect(rest.BearerToken).To(Equal("TOKEN"))
	g.Expect(rest.CAData).To(Equal([]byte("CA")))
	ns, _, err := clientcmd.NewDefaultClientConfig(*cfg, nil).Namespace()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns).To(Equal("team-a"))
}

func TestTokenRecordRoundTrip(t *testing.T) {
	g := NewWithT(t)
	tok := issuedToken{issuedAt: issued, expiresAt: issued.Add(time.Hour), expiration: time.Hour, rotationToken: "x", serviceAccountUID: "sa"}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u"), Annotations: tokenAnnotations(tok, "u")},
		Data: map[string][]byte{tenantv1.TenantKubeconfigKey: []byte("k")}}
	got, ok := readIssuedToken(s)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(tok))
}
