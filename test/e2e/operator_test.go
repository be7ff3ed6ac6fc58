package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/testgen"
)

// runOperator runs the operator to its exit (within 30 s) and returns its
// exit code and output.
func runOperator(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, operatorBinary, args...)
	cmd.Env = []string{"KUBERNETES_SERVICE_HOST=", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the operator did not exit within 30s: %s", out)
	}
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

func TestBadFlagsGetOneLine(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "platform-operator: flag provided but not defined: -bogus (see --help)"},
		{[]string{"--namespace", "a", "--all-namespaces"}, "--all-namespaces and --namespace exclude each other"},
		{[]string{"--log-format", "xml"}, `--log-format must be json or text, not "xml"`},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "load --kubeconfig /nonexistent/kubeconfig"},
		{[]string{}, "no cluster to talk to: pass --kubeconfig, set $KUBECONFIG, or run in a cluster"},
	} {
		g := NewWithT(t)
		code, out := runOperator(t, tt.args...)
		g.Expect(code).NotTo(BeZero(), "%v", tt.args)
		g.Expect(out).To(ContainSubstring(tt.want), "%v", tt.args)
		g.Expect(strings.Count(strings.TrimSpace(out), "\n")).To(BeZero(), "one line: %q", out)
	}
}

func TestAPIServerUnreachableGetsOneLine(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ports, err := devenv.FreePorts(1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shared.Cluster.WriteKubeconfig(kubeconfig, "nobody", "token")).To(Succeed())
	// Point it at a port where nothing listens.
	data := strings.Replace(readFile(t, kubeconfig), shared.Cluster.Server(),
		"https://127.0.0.1:"+strconv.Itoa(ports[0]), 1)
	writeFile(t, kubeconfig, data)

	code, out := runOperator(t, "--kubeconfig", kubeconfig)
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("cannot reach the API server at https://127.0.0.1:" + strconv.Itoa(ports[0])))
	g.Expect(out).To(ContainSubstring("connection refused"))
}

// On a cluster without the CRD, or with the tutorial's CRD, the operator
// says what to apply; after deploy/crd.yaml is applied over the tutorial's,
// the Websites created under the tutorial's CRD become Ready.
func TestMissingAndTutorialCRD(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	e, err := newEnvironment(ctx, envOptions{
		manifests:  []string{"deploy/namespace.yaml", "deploy/rbac.yaml"},
		noOperator: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer e.Stop()
	kubeconfig := filepath.Join(e.Cluster.Dir(), "operator.kubeconfig")
	g.Expect(devenv.ServiceAccountKubeconfig(ctx, e.Cluster, devenv.OperatorNamespace, devenv.OperatorServiceAccount, kubeconfig)).To(Succeed())

	code, out := runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("is not installed in this cluster: apply deploy/crd.yaml first"))

	// The tutorial's CRD and website.yaml, exactly as the tutorial has them.
	for _, file := range []string{"testdata/tutorial/crd.yaml", "testdata/tutorial/website.yaml"} {
		g.Eventually(func() error {
			_, err := e.Kubectl(ctx, "apply", "-f", filepath.Join(repoRoot, file))
			return err
		}).WithTimeout(20*time.Second).Should(Succeed(), file)
	}
	code, out = runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("has no status subresource (is it the tutorial's crd.yaml?): apply deploy/crd.yaml"))

	out, err = e.Kubectl(ctx, "apply", "-f", filepath.Join(repoRoot, "deploy/crd.yaml"))
	g.Expect(err).NotTo(HaveOccurred(), out)
	_, err = e.StartOperator(ctx, "--all-namespaces")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		w := e.website(g, ctx, "default", "my-site")
		g.Expect(w.Spec.Replicas).To(HaveValue(Equal(int32(1))), "defaulted on read")
		g.Expect(readyCondition(w).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
}

// The namespace-scoped variant of deploy/ grants rights in one namespace;
// with --namespace the operator serves Websites there and leaves the others
// alone.
func TestNamespaceScopedOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	e, err := newEnvironment(ctx, envOptions{
		manifests:    []string{"deploy/namespace.yaml", "deploy/crd.yaml", "deploy/namespaced/rbac.yaml"},
		operatorArgs: []string{"--namespace=websites", "--verbose"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer e.Stop()
	other := e.newNamespace(t, nil)

	for _, ns := range []string{"websites", other} {
		w := testgen.Website("site", ns)
		w.UID, w.Generation = "", 0
		g.Expect(e.Client.Create(ctx, w)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(readyCondition(e.website(g, ctx, "websites", "site")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).Should(Succeed())
	g.Consistently(func(g Gomega) {
		err := e.Client.Get(ctx, types.NamespacedName{Namespace: other, Name: "site"}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		g.Expect(e.website(g, ctx, other, "site").Status.Conditions).To(BeEmpty())
	}).WithTimeout(3*time.Second).Should(Succeed(), "a Website outside --namespace is left alone")
	g.Expect(readFile(t, e.operator().LogPath)).NotTo(ContainSubstring("forbidden"))
}

// With a rule missing from its role, the operator stops at start with one
// line naming the verb and resource.
func TestMissingRBACRuleIsNamed(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	e := shared
	ns := e.newNamespace(t, nil)
	token := e.serviceAccountToken(t, ns, "weak")
	// Reading Websites, Services, pods and Ingresses, but nothing of
	// Deployments and no writes.
	out, err := e.Kubectl(ctx, "create", "clusterrole", "weak-"+ns,
		"--verb=get,list,watch", "--resource=websites.example.com,services,pods,ingresses.networking.k8s.io")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = e.Kubectl(ctx, "create", "clusterrolebinding", "weak-"+ns, "--clusterrole=weak-"+ns, "--serviceaccount="+ns+":weak")
	g.Expect(err).NotTo(HaveOccurred(), out)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(e.Cluster.WriteKubeconfig(kubeconfig, "weak", token)).To(Succeed())

	code, out := runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("RBAC (403 Forbidden): the operator may not"))
	g.Expect(out).To(ContainSubstring("list deployments.apps in all namespaces"))
	g.Expect(out).To(ContainSubstring("patch websites/status.example.com"))
}
