package postgrescluster_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
)

// An object of a name the cluster's pods would use, which the operator did
// not make (here a ServiceAccount db-instance of someone else's, and a
// Secret db-superuser), is not borrowed: the cluster reports the conflict,
// naming it, and starts no pod that would run as that account or read that
// Secret (issue 52, finding 1).
func TestObjectsOfItsNamesThatAreNotItsOwnAreNotBorrowed(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "taken-names"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(suite.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "db-instance", Namespace: ns}})).To(Succeed())
	g.Expect(suite.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-superuser", Namespace: ns},
		StringData: map[string]string{"username": "postgres", "password": "theirs"}})).To(Succeed())
	pg := &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: 1, Image: "postgres:15", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	}
	g.Expect(suite.Client.Create(ctx, pg)).To(Succeed())
	g.Eventually(func(g Gomega) {
		pg := getCluster(g, ctx, ns, "db")
		degraded := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition)
		g.Expect(degraded).NotTo(BeNil())
		g.Expect(degraded.Reason).To(Equal(v1alpha1.PostgresConflictReason), degraded.Message)
		g.Expect(strings.Contains(degraded.Message, "db-instance") || strings.Contains(degraded.Message, "db-superuser")).To(BeTrue(), degraded.Message)
	}).WithTimeout(timeout).Should(Succeed())
	g.Consistently(func(g Gomega) []corev1.Pod {
		pods := &corev1.PodList{}
		g.Expect(suite.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		return pods.Items
	}).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(BeEmpty(), "no pod runs with borrowed objects")
	secret := &corev1.Secret{}
	g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "db-superuser"}, secret)).To(Succeed())
	g.Expect(string(secret.Data["password"])).To(Equal("theirs"), "their Secret untouched")
}

// A Secret named as the cluster's CA or server certificate that the
// operator did not make is a conflict as the credentials' are: the pods
// would mount it, so none starts, and it is left as it is.
func TestCertificateSecretsThatAreNotItsOwnHoldThePods(t *testing.T) {
	suite.NeedsAPIServer(t)
	for _, name := range []string{"db-ca", "db-server"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := t.Context()
			ns := "taken-" + name
			g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
			g.Expect(suite.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				StringData: map[string]string{"tls.crt": "theirs"}})).To(Succeed())
			g.Expect(suite.Client.Create(ctx, &v1alpha1.PostgresCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
				Spec:       v1alpha1.PostgresClusterSpec{Instances: 1, Image: "postgres:15", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
			})).To(Succeed())
			g.Eventually(func(g Gomega) {
				pg := getCluster(g, ctx, ns, "db")
				degraded := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.PostgresDegradedCondition)
				g.Expect(degraded).NotTo(BeNil())
				g.Expect(degraded.Reason).To(Equal(v1alpha1.PostgresConflictReason), degraded.Message)
				g.Expect(degraded.Message).To(ContainSubstring(name))
			}).WithTimeout(timeout).Should(Succeed())
			g.Consistently(func(g Gomega) []corev1.Pod {
				pods := &corev1.PodList{}
				g.Expect(suite.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
				return pods.Items
			}).WithTimeout(3*time.Second).WithPolling(500*time.Millisecond).Should(BeEmpty(), "no pod mounts a stranger's certificate")
			secret := &corev1.Secret{}
			g.Expect(suite.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, secret)).To(Succeed())
			g.Expect(string(secret.Data["tls.crt"])).To(Equal("theirs"), "their Secret untouched")
		})
	}
}

// An application Secret made before the cluster had TLS (no ca.crt, URIs
// without sslmode) gains the CA and URIs that verify the server; the
// password a person set in it stays.
func TestAppSecretMadeBeforeTLSGainsTheCA(t *testing.T) {
	suite.NeedsAPIServer(t)
	g := NewWithT(t)
	ctx := t.Context()
	ns := "app-secret-before-tls"
	g.Expect(suite.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(suite.Client.Create(ctx, &v1alpha1.PostgresCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec:       v1alpha1.PostgresClusterSpec{Instances: 1, Image: "postgres:15", Storage: v1alpha1.PostgresStorage{Size: resource.MustParse("1Gi")}},
	})).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "db-app"}
	secret := &corev1.Secret{}
	g.Eventually(func() error { return suite.Client.Get(ctx, key, secret) }).WithTimeout(timeout).Should(Succeed())
	ca := string(secret.Data["ca.crt"])
	g.Expect(ca).To(ContainSubstring("BEGIN CERTIFICATE"))

	// As an operator before TLS left it, with a password a person changed.
	delete(secret.Data, "ca.crt")
	secret.Data["password"] = []byte("changed-by-hand")
	secret.Data["uri"] = []byte("postgresql://app:changed-by-hand@db-rw.app-secret-before-tls.svc.cluster.local:5432/app")
	g.Expect(suite.Client.Update(ctx, secret)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(suite.Client.Get(ctx, key, secret)).To(Succeed())
		g.Expect(string(secret.Data["ca.crt"])).To(Equal(ca))
		g.Expect(string(secret.Data["uri"])).To(Equal("postgresql://app:changed-by-hand@db-rw.app-secret-before-tls.svc.cluster.local:5432/app?sslmode=verify-full"))
		g.Expect(string(secret.Data["jdbc-uri"])).To(ContainSubstring("password=changed-by-hand"))
	}).WithTimeout(timeout).Should(Succeed())
	g.Expect(string(secret.Data["password"])).To(Equal("changed-by-hand"), "the password a person set stays")
}
