package reliability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/testgen"
)

const leaseName = "platform-operator.example.com"

// leaseHolder polls the leader election Lease until its holder differs from
// notThis (and is not empty), and returns the new holder.
func leaseHolder(t *testing.T, env *devenv.Environment, notThis string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		lease, err := env.Clientset.CoordinationV1().Leases(devenv.OperatorNamespace).Get(t.Context(), leaseName, metav1.GetOptions{})
		if err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && *lease.Spec.HolderIdentity != notThis {
			return *lease.Spec.HolderIdentity
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the Lease holder did not change from %q within %s", notThis, timeout)
	return ""
}

// Scenario 1. SIGKILL the leader while 200 Websites are being created: the
// standby takes over within the lease timing and every Website ends Ready,
// with exactly one Deployment and one Service.
func TestLeaderFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	leader := env.Operators()[0]
	holder := leaseHolder(t, env, "", 30*time.Second)
	_, err := env.StartOperator(ctx, operatorArgs...)
	g.Expect(err).NotTo(HaveOccurred())
	newNamespace(t, env, "burst")

	var once sync.Once
	killed := make(chan time.Time, 1)
	g.Expect(createWebsites(ctx, env.Client, "burst", 200, func(created int) {
		if created >= 50 {
			once.Do(func() {
				leader.Kill()
				killed <- time.Now()
			})
		}
	})).To(Succeed())
	killedAt := <-killed

	newHolder := leaseHolder(t, env, holder, 45*time.Second)
	takeover := time.Since(killedAt)
	t.Logf("standby %s took over %s after the leader was killed", newHolder, takeover.Round(100*time.Millisecond))
	g.Expect(takeover).To(BeNumerically("<", 25*time.Second), "the lease lasts 15 s")

	converged := waitAllReady(t, env.Client, "burst", 200, 3*time.Minute)
	t.Logf("all 200 Websites Ready %s after the takeover", converged.Round(100*time.Millisecond))
	checkOneOfEachChild(g, ctx, env.Client, "burst", 200)
}

// Scenario 1, continued. A leader that is frozen (SIGSTOP, as in a long
// pause) loses its lease to the standby; when it wakes up it writes nothing,
// not even an event, and restarts in place to rejoin the election as a
// standby.
func TestOldLeaderWritesNothingAfterLosingTheLease(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, true)
	old, err := env.StartOperator(ctx, append(operatorArgs, "--log-format=json")...)
	g.Expect(err).NotTo(HaveOccurred())
	holder := leaseHolder(t, env, "", 30*time.Second)
	_, err = env.StartOperator(ctx, append(operatorArgs, "--log-format=json")...)
	g.Expect(err).NotTo(HaveOccurred())
	newNamespace(t, env, "work")
	g.Expect(createWebsites(ctx, env.Client, "work", 20, nil)).To(Succeed())
	waitAllReady(t, env.Client, "work", 20, time.Minute)

	g.Expect(syscall.Kill(old.PID(), syscall.SIGSTOP)).To(Succeed())
	leaseHolder(t, env, holder, 45*time.Second)
	// Work for the new leader, and events that reach the old one when it
	// wakes up: every Website changes.
	for i := range 20 {
		name := websiteName(i)
		g.Expect(env.Client.Patch(ctx, &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: name}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"image":"nginx:1.27"}}`)))).To(Succeed())
	}
	waitAllReady(t, env.Client, "work", 20, time.Minute)

	resumed := time.Now()
	g.Expect(syscall.Kill(old.PID(), syscall.SIGCONT)).To(Succeed())
	g.Eventually(func() string { return devenv.TailFile(old.LogPath, 1000) }).WithTimeout(30*time.Second).
		Should(ContainSubstring("restarting in place to rejoin the election"), "the old leader notices it lost the lease")
	g.Expect(writesLoggedAfter(t, old.LogPath, resumed)).To(BeEmpty(), "the old leader wrote after it woke up")
	events, err := env.Kubectl(ctx, "get", "events.events.k8s.io", "-n", "work", "-o", "jsonpath={range .items[*]}{.note}{\"\\n\"}{end}")
	g.Expect(err).NotTo(HaveOccurred(), events)
	g.Expect(events).NotTo(ContainSubstring("not the leader"), "no event about the refused writes")
	exited, _ := old.Exited()
	g.Expect(exited).To(BeFalse(), "it stays, as a standby")
}

// writesLoggedAfter returns the operator's log lines about writes (applies
// and status updates) at or after since.
func writesLoggedAfter(t *testing.T, path string, since time.Time) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var writes []string
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		var entry struct {
			TS  float64 `json:"ts"`
			Msg string  `json:"msg"`
		}
		if json.Unmarshal(scanner.Bytes(), &entry) != nil {
			continue
		}
		at := time.Unix(0, int64(entry.TS*1e9))
		if !at.Before(since) && (entry.Msg == "Applied child" || entry.Msg == "Status updated") {
			writes = append(writes, scanner.Text())
		}
	}
	return writes
}

// Scenario 2. kube-apiserver stops for 30 s in the middle of a burst (etcd
// keeps the data): the operator neither spins nor needs a restart, it has
// made every child within 60 s of the recovery, and every Website is Ready
// as soon as its Deployment is available. (How soon that is depends on
// kube-controller-manager, whose watches back off during the outage.)
func TestAPIServerOutage(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	op := env.Operators()[0]
	newNamespace(t, env, "burst")
	g.Expect(createWebsites(ctx, env.Client, "burst", 200, nil)).To(Succeed())

	g.Expect(env.Cluster.StopComponent(localcluster.APIServer)).To(Succeed())
	cpuBefore, err := cpuSeconds(op.PID())
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(30 * time.Second)
	cpuDuring, err := cpuSeconds(op.PID())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Cluster.StartComponent(localcluster.APIServer)).To(Succeed())
	t.Logf("operator CPU during the 30 s outage: %.2f s", cpuDuring-cpuBefore)
	g.Expect(cpuDuring-cpuBefore).To(BeNumerically("<", 3), "no busy retry loop")
	exited, _ := op.Exited()
	g.Expect(exited).To(BeFalse(), "the operator survives the outage without a restart")

	r := watchRecovery(t, env, "burst", 200, 3*time.Minute)
	t.Logf("after kube-apiserver started again: every Deployment and Service exists after %s (the operator's part), "+
		"every Deployment is available after %s (kube-controller-manager's), every Website Ready after %s",
		r.children.Round(100*time.Millisecond), r.available.Round(100*time.Millisecond), r.ready.Round(100*time.Millisecond))
	g.Expect(r.children).To(BeNumerically("<", 60*time.Second), "the operator catches up within 60 s")
	g.Expect(r.ready-r.available).To(BeNumerically("<", 5*time.Second), "status follows the Deployments at once")
	checkOneOfEachChild(g, ctx, env.Client, "burst", 200)
	exited, _ = op.Exited()
	g.Expect(exited).To(BeFalse())
}

// Scenario 3. SIGKILL the operator in the middle of a burst of 200 and start
// it again: every Website converges, with exactly one Deployment and one
// Service each.
func TestCrashInTheMiddleOfWork(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	op := env.Operators()[0]
	newNamespace(t, env, "burst")
	g.Expect(createWebsites(ctx, env.Client, "burst", 200, nil)).To(Succeed())

	// Kill it once it has done part of the work.
	g.Eventually(func(g Gomega) {
		var deployments appsv1.DeploymentList
		g.Expect(env.Client.List(ctx, &deployments, client.InNamespace("burst"))).To(Succeed())
		g.Expect(len(deployments.Items)).To(BeNumerically(">=", 30))
	}).WithTimeout(time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
	op.Kill()
	ready, _, err := readyCount(ctx, env.Client, "burst")
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("killed with %d of 200 Ready", ready)

	_, err = env.StartOperator(ctx, operatorArgs...)
	g.Expect(err).NotTo(HaveOccurred())
	converged := waitAllReady(t, env.Client, "burst", 200, 3*time.Minute)
	t.Logf("all 200 Websites Ready %s after the restart", converged.Round(100*time.Millisecond))
	checkOneOfEachChild(g, ctx, env.Client, "burst", 200)
}

// Scenario 4. With the operator stopped, deleting a namespace of 100
// Websites completes (no finalizer holds it), and deleting a Website removes
// its children through the garbage collector.
func TestDeletionWithTheOperatorDown(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	newNamespace(t, env, "doomed")
	newNamespace(t, env, "single")
	g.Expect(createWebsites(ctx, env.Client, "doomed", 100, nil)).To(Succeed())
	g.Expect(createWebsites(ctx, env.Client, "single", 1, nil)).To(Succeed())
	waitAllReady(t, env.Client, "doomed", 100, 2*time.Minute)
	waitAllReady(t, env.Client, "single", 1, time.Minute)
	g.Expect(env.Operators()[0].Stop(20 * time.Second)).To(Succeed())

	began := time.Now()
	g.Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "doomed"}})).To(Succeed())
	g.Expect(env.Client.Delete(ctx, &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: "single", Name: websiteName(0)}})).To(Succeed())

	g.Eventually(func() error {
		return env.Client.Get(ctx, types.NamespacedName{Name: "doomed"}, &corev1.Namespace{})
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "the namespace is gone")
	t.Logf("namespace of 100 Websites gone %s after its deletion, with the operator down", time.Since(began).Round(100*time.Millisecond))
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		g.Eventually(func() error {
			return env.Client.Get(ctx, types.NamespacedName{Namespace: "single", Name: websiteName(0)}, obj)
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "%T of a deleted Website", obj)
	}
}

// Scenario 5. Users update a Website 50 times a second for 10 s while it
// reconciles: the final state matches the last spec, and status never shows
// an error.
func TestConcurrentUpdates(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	newNamespace(t, env, "busy")
	g.Expect(createWebsites(ctx, env.Client, "busy", 1, nil)).To(Succeed())
	key := types.NamespacedName{Namespace: "busy", Name: websiteName(0)}

	var (
		mu       sync.Mutex
		problems []string
	)
	stopWatching := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatching:
				return
			case <-time.After(50 * time.Millisecond):
			}
			w := &websitev1.Website{}
			if env.Client.Get(ctx, key, w) != nil {
				continue
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, websitev1.DegradedCondition); c != nil && c.Status == metav1.ConditionTrue {
				mu.Lock()
				problems = append(problems, c.Reason+": "+c.Message)
				mu.Unlock()
			}
		}
	}()

	ticker := time.NewTicker(20 * time.Millisecond)
	var last int
	for i := 1; i <= 500; i++ {
		<-ticker.C
		// Alternately a user's merge patch and a full update that retries on
		// conflict, as kubectl patch and kubectl edit would.
		patch := fmt.Sprintf(`{"spec":{"image":"nginx:1.25-%d","replicas":%d}}`, i, i%3+1)
		g.Expect(env.Client.Patch(ctx, &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
			client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
		last = i
	}
	ticker.Stop()

	g.Eventually(func(g Gomega) {
		w := &websitev1.Website{}
		g.Expect(env.Client.Get(ctx, key, w)).To(Succeed())
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
		g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, websitev1.ReadyCondition)).To(BeTrue())
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(fmt.Sprintf("nginx:1.25-%d", last)))
		g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(last%3 + 1))))
	}).WithTimeout(time.Minute).Should(Succeed())
	close(stopWatching)
	<-watched
	g.Expect(problems).To(BeEmpty(), "conflicts are retried, never shown as errors")
}

// Scenario 6. Bad and hostile input is refused by the API server with a
// message naming the field; a Website that passes validation but cannot run
// ends Degraded, without a crash or a retry storm.
func TestHostileAndBadInput(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	newNamespace(t, env, "hostile")
	for i, tc := range testgen.InvalidWebsites {
		obj := &unstructured.Unstructured{}
		doc := fmt.Sprintf("apiVersion: example.com/v1\nkind: Website\nmetadata: {name: bad-%d, namespace: hostile}\n%s", i, tc.Spec)
		g.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed(), tc.Name)
		err := env.Client.Create(ctx, obj)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.Name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.Field), tc.Name)
	}

	w := testgen.Website("ghost", "hostile", testgen.WithImage("registry.invalid/does-not/exist:1"))
	w.UID, w.Generation = "", 0
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &websitev1.Website{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
		c := meta.FindStatusCondition(got.Status.Conditions, websitev1.DegradedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(websitev1.ImagePullFailedReason))
	}).WithTimeout(time.Minute).Should(Succeed())

	before := reconcilesOf(t, env)
	g.Expect(before).To(BeNumerically(">", 0), "the metric is read")
	time.Sleep(10 * time.Second)
	after := reconcilesOf(t, env)
	t.Logf("reconciles in 10 s with a Website that cannot run: %.0f", after-before)
	g.Expect(after-before).To(BeNumerically("<=", 5), "no retry storm")
	exited, _ := env.Operators()[0].Exited()
	g.Expect(exited).To(BeFalse())
}

// reconcilesOf reads controller_runtime_reconcile_total of the Website
// controller from the operator's /metrics, as the cluster admin.
func reconcilesOf(t *testing.T, env *devenv.Environment) float64 {
	t.Helper()
	status, body := devenv.HTTPGet(t.Context(), env.Operators()[0].MetricsURL, env.Cluster.RESTConfig().BearerToken)
	if status != 200 {
		t.Fatalf("GET /metrics: %d %s", status, body)
	}
	var total float64
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, `controller_runtime_reconcile_total{controller="website"`) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			total += v
		}
	}
	return total
}

// Scenario 8. What the operator's ServiceAccount may do, as the API server
// reports it: what deploy/rbac.yaml grants, and never Secrets, pod writes,
// escalate, bind or impersonate.
func TestEffectiveRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, true)
	as := "--as=system:serviceaccount:" + devenv.OperatorNamespace + ":" + devenv.OperatorServiceAccount
	for _, ns := range []string{"default", devenv.OperatorNamespace} {
		out, err := env.Kubectl(ctx, "auth", "can-i", "--list", "-n", ns, as)
		g.Expect(err).NotTo(HaveOccurred(), out)
		t.Logf("kubectl auth can-i --list -n %s %s:\n%s", ns, as, out)
		for _, line := range strings.Split(out, "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			resource, verbs := fields[0], line[strings.LastIndexByte(line, '['):]
			g.Expect(resource).NotTo(HavePrefix("secrets"), line)
			g.Expect(resource).NotTo(Equal("*.*"), line)
			if resource == "pods" {
				g.Expect(verbs).To(Equal("[get list watch]"), line)
			}
			for _, forbidden := range []string{"escalate", "bind", "impersonate", "*"} {
				g.Expect(strings.Fields(strings.Trim(verbs, "[]"))).NotTo(ContainElement(forbidden), line)
			}
		}
		g.Expect(out).To(ContainSubstring("websites.example.com"))
		g.Expect(out).To(MatchRegexp(`deployments.apps\s.*\[create get list patch watch\]`))
	}
	for _, check := range []struct {
		args    []string
		allowed bool
	}{
		{[]string{"get", "secrets", "-A"}, false},
		{[]string{"create", "pods", "-A"}, false},
		{[]string{"delete", "deployments", "-A"}, false},
		{[]string{"impersonate", "users"}, false},
		{[]string{"patch", "websites.example.com", "--subresource=status", "-A"}, true},
		{[]string{"update", "leases", "-n", devenv.OperatorNamespace}, true},
		{[]string{"update", "leases", "-n", "default"}, false},
	} {
		out, _ := env.Kubectl(ctx, append(append([]string{"auth", "can-i"}, check.args...), as)...)
		want := "no"
		if check.allowed {
			want = "yes"
		}
		g.Expect(strings.TrimSpace(out)).To(HavePrefix(want), "can-i %v", check.args)
	}
}

// recovery is how long, from the end of an outage, it took until every
// Deployment and Service existed (the operator's work), every Deployment was
// available (kube-controller-manager's and kwok's) and every Website was
// Ready (the operator reporting it).
type recovery struct{ children, available, ready time.Duration }

func watchRecovery(t *testing.T, env *devenv.Environment, ns string, n int, timeout time.Duration) recovery {
	t.Helper()
	since := time.Now()
	var r recovery
	for r.children == 0 || r.available == 0 || r.ready == 0 {
		if time.Since(since) > timeout {
			t.Fatalf("not converged %s after the outage (%+v); some Websites not Ready:\n%s", timeout, r, notReady(t.Context(), env.Client, ns, 5))
		}
		elapsed := time.Since(since)
		var deployments appsv1.DeploymentList
		var services corev1.ServiceList
		if env.Client.List(t.Context(), &deployments, client.InNamespace(ns)) == nil &&
			env.Client.List(t.Context(), &services, client.InNamespace(ns)) == nil {
			if r.children == 0 && len(deployments.Items) == n && len(services.Items) == n {
				r.children = elapsed
			}
			available := 0
			for _, d := range deployments.Items {
				if d.Status.ObservedGeneration == d.Generation && d.Status.AvailableReplicas == 1 {
					available++
				}
			}
			if r.available == 0 && available == n {
				r.available = elapsed
			}
		}
		if ready, _, err := readyCount(t.Context(), env.Client, ns); err == nil && ready == n && r.ready == 0 {
			r.ready = elapsed
		}
		time.Sleep(250 * time.Millisecond)
	}
	return r
}
