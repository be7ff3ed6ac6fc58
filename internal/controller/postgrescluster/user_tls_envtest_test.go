package postgrescluster_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/postgrescluster"
)

// A cluster whose user brings its server certificate (spec.tls, in
// cert-manager's format) serves that one: the operator copies it into
// CLUSTER-server, which the instances read, and gives the application
// Secret its CA; it makes no CA of its own. A Secret that appears after
// the cluster is taken when it does; one for other names is refused,
// naming what it misses, and nothing is served from it.
func TestUserCertificateIsServed(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	const ns = "user-tls"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	cluster := func(name, secret string) *v1alpha1.PostgresCluster {
		return &v1alpha1.PostgresCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.PostgresClusterSpec{Instances: 2, Image: "postgres:15", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")},
				TLS: &v1alpha1.PostgresTLS{ServerCertSecret: secret}},
		}
	}
	// certificates is a CA's and a server certificate for the names of
	// cluster name, as cert-manager would keep them in a Secret.
	certificates := func(name, secret string) *corev1.Secret {
		made, err := postgrescluster.DesiredTLSSecrets(cluster(name, ""), "cluster.local", time.Now())
		g.Expect(err).NotTo(HaveOccurred())
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns}, Type: corev1.SecretTypeTLS, Data: made[1].Data}
	}
	degraded := func(g Gomega, name string) *metav1.Condition {
		c := meta.FindStatusCondition(getCluster(g, ctx, ns, name).Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(c).NotTo(BeNil())
		return c
	}
	secret := func(g Gomega, name string) *corev1.Secret {
		s := &corev1.Secret{}
		g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)).To(Succeed())
		return s
	}

	g.Expect(suite.Client.Create(ctx, cluster("db", "db-certs"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := degraded(g, "db")
		g.Expect(c.Reason).To(Equal(v1alpha1.PostgresSecretMissingReason), c.Message)
		g.Expect(c.Message).To(Equal("Secret db-certs named by spec.tls.serverCertSecret does not exist"))
	}).WithTimeout(timeout).Should(Succeed())
	mine := certificates("db", "db-certs")
	g.Expect(suite.Client.Create(ctx, mine)).To(Succeed())
	g.Eventually(func(g Gomega) {
		server := secret(g, "db-server")
		g.Expect(server.Data).To(Equal(mine.Data), "the user's certificate, key and CA served")
		g.Expect(metav1.IsControlledBy(server, getCluster(g, ctx, ns, "db"))).To(BeTrue())
		g.Expect(secret(g, "db-app").Data).To(HaveKeyWithValue("ca.crt", mine.Data["ca.crt"]), "the application verifies with the user's CA")
		served := getCluster(g, ctx, ns, "db").Status.TLS
		g.Expect(served).NotTo(BeNil(), "the status says what is served")
		g.Expect(served.NotAfter.Time).To(BeTemporally("~", time.Now().Add(365*24*time.Hour), time.Hour), "when the user's certificate ends")
	}).WithTimeout(time.Minute).Should(Succeed())
	g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-ca"}, &corev1.Secret{})).
		To(Satisfy(apierrors.IsNotFound), "no CA of the operator's")

	// A hand edit of the served copy is undone at once, though the user's
	// Secret is not read again at every reconcile.
	edited := secret(g, "db-server")
	edited.Data[corev1.TLSCertKey] = []byte("forged")
	g.Expect(suite.Client.Update(ctx, edited)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(secret(g, "db-server").Data).To(Equal(mine.Data), "the user's certificate served again")
	}).WithTimeout(timeout).Should(Succeed())

	g.Expect(suite.Client.Create(ctx, certificates("another", "another-certs"))).To(Succeed())
	g.Expect(suite.Client.Create(ctx, cluster("wrong", "another-certs"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := degraded(g, "wrong")
		g.Expect(c.Reason).To(Equal(v1alpha1.PostgresCertificateInvalidReason), c.Message)
		g.Expect(c.Message).To(HavePrefix("Secret another-certs named by spec.tls.serverCertSecret is not served: its certificate does not cover " +
			"wrong-1.wrong.user-tls.svc.cluster.local, wrong-2.wrong.user-tls.svc.cluster.local, wrong-rw.user-tls.svc.cluster.local, wrong-ro.user-tls.svc.cluster.local"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wrong-server"}, &corev1.Secret{})).
		To(Satisfy(apierrors.IsNotFound), "nothing served from it")
}
