package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/helmtest"
	"example.com/platform-operator/internal/platform"
)

// chartPath is the chart that hack/gen-chart generates from deploy/.
const chartPath = repoRoot + "/charts/platform-operator"

// The chart installs, upgrades and uninstalls with the real helm, as
// docs/install.md says: into a namespace made and labelled first, the
// operator's Deployment becomes available and its ServiceAccount's rights
// reconcile a Website; an upgrade that switches a kind off takes its rights
// away and tells the operator; an uninstall removes the operator but keeps
// the CRDs and the Websites people made; a second install over those CRDs,
// for one namespace, grants the Website rights there alone.
func TestHelmChartInstallUpgradeUninstall(t *testing.T) {
	helm := helmtest.Binary(t)
	g := NewWithT(t)
	ctx := t.Context()
	// Nothing installed from deploy/: helm installs it all.
	e := startOwnEnvironment(t, devenv.EnvironmentOptions{Manifests: []string{}, DeferOperator: true})
	run := helmRunner(t, helm, e.Cluster.Kubeconfig())

	out, err := e.Kubectl(ctx, "create", "namespace", platform.Namespace)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = e.Kubectl(ctx, "label", "namespace", platform.Namespace,
		"pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest")
	g.Expect(err).NotTo(HaveOccurred(), out)

	start := time.Now()
	notes := run("install", platform.Name, chartPath, "--namespace", platform.Namespace, "--wait", "--timeout", "3m")
	t.Logf("helm install --wait took %s", time.Since(start).Round(time.Millisecond))
	g.Expect(notes).To(ContainSubstring("The platform operator runs in namespace " + platform.Namespace + ". Kinds: backupJob on,"))
	g.Expect(notes).NotTo(ContainSubstring("does not enforce"), "the namespace was labelled")
	deployment := &appsv1.Deployment{}
	key := types.NamespacedName{Namespace: platform.Namespace, Name: platform.Name}
	g.Expect(e.Client.Get(ctx, key, deployment)).To(Succeed())
	g.Expect(deployment.Status.AvailableReplicas).To(Equal(int32(2)), "the Deployment is available (kwok runs its pods)")
	for _, crd := range []string{"websites.example.com", "tenants.example.com", "backupjobs.example.com", "postgresclusters.example.com"} {
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), crd)
	}

	// kwok's pods run no container: the operator runs here as a process,
	// with the token of the ServiceAccount the chart made, so that it has
	// exactly the rights the chart grants.
	if _, err := e.StartOperator(ctx, chartOperatorArgs(deployment)...); err != nil {
		t.Fatalf("start the operator with the chart's ServiceAccount: %v", err)
	}
	w := websitetest.Website("site", "default")
	w.UID, w.Generation = "", 0
	g.Expect(e.Client.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, "default", "site")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed(), "the Website is reconciled with the chart's rights")

	notes = run("upgrade", platform.Name, chartPath, "--namespace", platform.Namespace, "--wait", "--timeout", "3m",
		"--reuse-values", "--set", "replicas=1", "--set", "tenant.enabled=false")
	g.Expect(notes).To(ContainSubstring("tenant off"))
	g.Expect(e.Client.Get(ctx, key, deployment)).To(Succeed())
	g.Expect(*deployment.Spec.Replicas).To(Equal(int32(1)))
	g.Expect(deployment.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--controllers=*,-tenant"))
	err = e.Client.Get(ctx, types.NamespacedName{Name: platform.Name + "-tenant"}, &rbacv1.ClusterRole{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Tenant's rights are gone: %v", err)
	g.Expect(e.Client.Get(ctx, types.NamespacedName{Name: platform.Name + "-website"}, &rbacv1.ClusterRole{})).To(Succeed())

	// The operator's rights go with the chart: stop it first, as a real
	// Deployment's pods would be.
	for _, op := range e.Operators() {
		g.Expect(op.Stop(20 * time.Second)).To(Succeed())
	}
	run("uninstall", platform.Name, "--namespace", platform.Namespace, "--wait", "--timeout", "3m")
	for _, gone := range []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: platform.Namespace, Name: platform.Name}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: platform.Namespace, Name: platform.Name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: platform.Name + "-website"}},
	} {
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(gone), gone)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s is uninstalled: %v", gone, gone.GetName(), err)
	}
	for _, crd := range []string{"websites.example.com", "tenants.example.com", "backupjobs.example.com", "postgresclusters.example.com"} {
		g.Expect(e.Client.Get(ctx, types.NamespacedName{Name: crd}, &apiextensionsv1.CustomResourceDefinition{})).To(Succeed(), "%s survives the uninstall", crd)
	}
	site := e.website(g, ctx, "default", "site")
	g.Expect(site.DeletionTimestamp).To(BeNil(), "the Website survives the uninstall")

	// Installed again, over the CRDs that survived (Helm leaves them as
	// they are), for the Websites of one namespace only.
	const watched = "websites"
	out, err = e.Kubectl(ctx, "create", "namespace", watched)
	g.Expect(err).NotTo(HaveOccurred(), out)
	args := []string{"install", platform.Name, chartPath, "--namespace", platform.Namespace, "--wait", "--timeout", "3m",
		"--set", "watchNamespace=" + watched}
	for _, kind := range []string{"tenant", "backupJob", "postgresCluster"} {
		args = append(args, "--set", kind+".enabled=false")
	}
	run(args...)
	g.Expect(e.Client.Get(ctx, key, deployment)).To(Succeed())
	if _, err := e.StartOperator(ctx, chartOperatorArgs(deployment)...); err != nil {
		t.Fatalf("start the operator as the namespaced chart's Deployment would: %v", err)
	}
	w = websitetest.Website("site", watched)
	w.UID, w.Generation = "", 0
	g.Expect(e.Client.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, watched, "site")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed(), "the Website of the watched namespace is reconciled")
	operator := "--as=system:serviceaccount:" + platform.Namespace + ":" + platform.Name
	out, _ = e.Kubectl(ctx, "auth", "can-i", operator, "create", "deployments.apps", "-n", watched)
	g.Expect(answer(out)).To(Equal("yes"))
	out, _ = e.Kubectl(ctx, "auth", "can-i", operator, "create", "deployments.apps", "-n", "default")
	g.Expect(answer(out)).To(Equal("no"), "no rights outside the watched namespace")
}

// chartOperatorArgs are the arguments the chart gives the operator's
// container but those that devenv sets for a process on this machine
// (leader election, the metrics and probe addresses): its scope and
// --controllers, so that the process runs what the chart's pods would.
func chartOperatorArgs(d *appsv1.Deployment) []string {
	var args []string
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args {
		switch name, _, _ := strings.Cut(arg, "="); name {
		case "--leader-elect", "--metrics-bind-address", "--health-probe-bind-address":
			continue
		}
		args = append(args, arg)
	}
	return args
}

// helmRunner returns a function that runs helm against kubeconfig, with
// its configuration and caches in the test's own folder, and fails the
// test on an error.
func helmRunner(t *testing.T, helm, kubeconfig string) func(args ...string) string {
	dir := t.TempDir()
	env := append(os.Environ(),
		"KUBECONFIG="+kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"),
		"HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_DATA_HOME="+filepath.Join(dir, "data"))
	return func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
