package e2e

import (
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/devenv"
)

// runOperator runs the operator to its exit (within a minute) and returns its
// exit code and output.
func runOperator(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, operatorBinary, args...)
	cmd.Env = []string{"KUBERNETES_SERVICE_HOST=", "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the operator did not exit within a minute: %s", out)
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
		{[]string{"--controllers=nope"}, `platform-operator: --controllers: unknown controller "nope"; known controllers: website`},
		{[]string{"--controllers=-website"}, "leaves no controller to run"},
	} {
		g := NewWithT(t)
		code, out := runOperator(t, tt.args...)
		g.Expect(code).NotTo(BeZero(), "%v", tt.args)
		g.Expect(out).To(ContainSubstring(tt.want), "%v", tt.args)
		g.Expect(strings.Count(strings.TrimSpace(out), "\n")).To(BeZero(), "one line: %q", out)
	}
}

// An operator whose API server cannot be reached waits for it, however
// long, alive and saying why it is not ready, and stops cleanly on SIGTERM.
func TestOperatorWaitsForAnUnreachableAPIServer(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	ports, err := devenv.FreePorts(2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(shared.Cluster.WriteKubeconfig(kubeconfig, "nobody", "token")).To(Succeed())
	// Point it at a port where nothing listens.
	server := "https://127.0.0.1:" + strconv.Itoa(ports[0])
	writeFile(t, kubeconfig, strings.Replace(readFile(t, kubeconfig), shared.Cluster.Server(), server, 1))
	probes := "http://127.0.0.1:" + strconv.Itoa(ports[1])

	var out bytes.Buffer
	cmd := exec.Command(operatorBinary, "--kubeconfig", kubeconfig, "--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(ports[1]))
	cmd.Env = []string{"KUBERNETES_SERVICE_HOST=", "HOME=" + t.TempDir()}
	cmd.Stdout, cmd.Stderr = &out, &out
	// The process lives at most from here until its exit is seen.
	began := time.Now()
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()

	g.Eventually(func(g Gomega) {
		status, body := devenv.HTTPGet(t.Context(), probes+"/readyz", "")
		g.Expect(status).To(Equal(http.StatusServiceUnavailable))
		g.Expect(body).To(Equal("not ready: waiting for the API server at " + server + ": dial tcp 127.0.0.1:" + strconv.Itoa(ports[0]) + ": connect: connection refused\n"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	// Still waiting after several tries: alive, not ready.
	g.Consistently(func(g Gomega) {
		status, _ := devenv.HTTPGet(t.Context(), probes+"/healthz", "")
		g.Expect(status).To(Equal(http.StatusOK))
		status, _ = devenv.HTTPGet(t.Context(), probes+"/readyz", "")
		g.Expect(status).To(Equal(http.StatusServiceUnavailable))
	}).WithTimeout(8 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	g.Eventually(exited).WithTimeout(5*time.Second).Should(Receive(BeNil()), "a clean exit: %s", &out)
	lived := time.Since(began)
	// What a person reads while it waits: the cause, and a line every 5 s
	// of its whole life, not one per try.
	g.Expect(out.String()).To(ContainSubstring(`Waiting for the API server	{"apiServer": "` + server + `", "error": "dial tcp 127.0.0.1:` + strconv.Itoa(ports[0]) + `: connect: connection refused"`))
	g.Expect(strings.Count(out.String(), "Waiting for the API server")).To(BeNumerically("<=", int(lived/(5*time.Second))+1),
		"a line every 5 s, not one per try, in the %s it lived at most: %s", lived, &out)
}

// Credentials that the API server keeps rejecting end the wait after 30 s
// (a kube-apiserver that has just started refuses valid ones for a few
// seconds), with one line naming the cause as the last word.
func TestRejectedCredentialsGetOneLine(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(shared.Cluster.WriteKubeconfig(kubeconfig, "nobody", "not-a-token")).To(Succeed())
	began := time.Now()
	code, out := runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	g.Expect(code).To(Equal(1))
	g.Expect(time.Since(began)).To(BeNumerically(">=", 30*time.Second), "early rejections are waited out")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	g.Expect(lines[len(lines)-1]).To(HaveSuffix("rejected the operator's credentials (401 Unauthorized): check the token or certificate of the kubeconfig"))
	for _, line := range lines[:len(lines)-1] {
		g.Expect(line).To(ContainSubstring("Waiting for the API server"), "only the wait is logged before: %q", out)
		g.Expect(line).To(ContainSubstring("retrying"))
	}
}

// On a cluster without the CRD, or with the tutorial's CRD, the operator
// says what to apply; after deploy/components/website/crd.yaml is applied over the tutorial's,
// the Websites created under the tutorial's CRD become Ready.
func TestMissingAndTutorialCRD(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	e, err := newEnvironment(ctx, envOptions{
		manifests:  []string{"deploy/base", "deploy/components/website/role.yaml", "deploy/components/website/role_binding.yaml"},
		noOperator: true,
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer e.Stop()
	kubeconfig := filepath.Join(e.Cluster.Dir(), "operator.kubeconfig")
	g.Expect(devenv.ServiceAccountKubeconfig(ctx, e.Cluster, devenv.OperatorNamespace, devenv.OperatorServiceAccount, kubeconfig)).To(Succeed())

	code, out := runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("no controller to run: website: websites (example.com/v1) is not installed in this cluster: " +
		"apply the website component of deploy/ (deploy/components/website) first"))
	code, out = runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--controllers=website")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("controller website, named in --controllers, cannot run: websites (example.com/v1) is not installed"))

	// The tutorial's CRD and website.yaml, exactly as the tutorial has them.
	for _, file := range []string{"testdata/tutorial/crd.yaml", "testdata/tutorial/website.yaml"} {
		g.Eventually(func() error {
			_, err := e.Kubectl(ctx, "apply", "-f", filepath.Join(repoRoot, file))
			return err
		}).WithTimeout(20*time.Second).Should(Succeed(), file)
	}
	code, out = runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0")
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(ContainSubstring("the installed websites.example.com CRD has no status subresource (is it an older or foreign CRD, such as the tutorial's crd.yaml?): " +
		"apply the website component of deploy/ (deploy/components/website), which keeps every existing Website"))

	out, err = e.Kubectl(ctx, "apply", "-f", filepath.Join(repoRoot, "deploy/components/website/crd.yaml"))
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
		manifests:    []string{"deploy/overlays/namespaced"},
		operatorArgs: []string{"--namespace=websites", "--verbose"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer e.Stop()
	other := e.newNamespace(t, nil)

	for _, ns := range []string{"websites", other} {
		w := websitetest.Website("site", ns)
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

	// The checks follow the controllers that run: here the Website's only.
	code, out := runOperator(t, "--kubeconfig", kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--controllers=website")
	g.Expect(code).To(Equal(1))
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	g.Expect(last).To(HavePrefix("platform-operator: RBAC (403 Forbidden): the operator may not "))
	g.Expect(last).To(ContainSubstring("create tokenreviews.authentication.k8s.io (cluster-wide)"))
	g.Expect(last).To(ContainSubstring("list deployments.apps in all namespaces"))
	g.Expect(last).To(ContainSubstring("patch websites/status.example.com in all namespaces"))
	g.Expect(last).NotTo(ContainSubstring("watch pods"), "what the role grants is not named")
	g.Expect(last).NotTo(ContainSubstring("tenants"), "nor what other controllers need")
	g.Expect(last).To(HaveSuffix("; grant it what deploy/base/role.yaml and deploy/components/website/role.yaml grant"))
}
