package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/platform"
)

// A cluster that installs only the Website component runs only the Website
// controller, and its operator holds none of the rights that the other
// kinds need: creating namespaces and binding roles never ride along.
func TestOnlyTheWebsiteComponentInstalled(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	setup, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	env, err := devenv.StartEnvironment(setup, devenv.EnvironmentOptions{
		RepoRoot:       repoRoot,
		Scheme:         scheme,
		Components:     []string{"website"},
		OperatorBinary: operatorBinary,
	})
	g.Expect(err).NotTo(HaveOccurred())
	e := &environment{env}
	t.Cleanup(e.Stop)

	for _, crd := range []string{"tenants.example.com", "backupjobs.example.com"} {
		err := e.Client.Get(ctx, types.NamespacedName{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%s is not installed: %v", crd, err)
	}
	operator := "--as=system:serviceaccount:" + platform.Namespace + ":" + platform.Name
	for _, denied := range [][]string{
		{"create", "namespaces"},
		{"bind", "clusterroles/admin"},
		{"list", "secrets", "--all-namespaces"},
		{"create", "serviceaccounts/token", "-n", "default"},
		{"create", "jobs.batch", "-n", "default"},
	} {
		out, _ := e.Kubectl(ctx, append([]string{"auth", "can-i", operator}, denied...)...)
		g.Expect(answer(out)).To(Equal("no"), "the operator may not %v", denied)
	}
	out, _ := e.Kubectl(ctx, "auth", "can-i", operator, "create", "deployments.apps", "-n", "default")
	g.Expect(answer(out)).To(Equal("yes"), "what Websites need is granted")

	w := websitetest.Website("site", "default")
	w.UID, w.Generation = "", 0
	g.Expect(e.Client.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, "default", "site")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())

	// Which controllers run, from controller-runtime's own metrics.
	ns := e.newNamespace(t, nil)
	scraper := e.serviceAccountToken(t, ns, "prometheus")
	out, err = e.Kubectl(ctx, "create", "clusterrolebinding", "metrics-"+ns,
		"--clusterrole="+platform.Name+"-metrics-reader", "--serviceaccount="+ns+":prometheus")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var body string
	g.Eventually(func(g Gomega) {
		var status int
		status, body = devenv.HTTPGet(ctx, e.operator().MetricsURL, scraper)
		g.Expect(status).To(Equal(http.StatusOK))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(body).To(ContainSubstring(`controller_runtime_max_concurrent_reconciles{controller="website"}`))
	g.Expect(body).NotTo(ContainSubstring(`controller="tenant"`))
	g.Expect(body).NotTo(ContainSubstring(`controller="backupjob"`))
}

// answer is kubectl auth can-i's answer: its last line, after any warning
// (such as one that namespaces are not namespace scoped).
func answer(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
