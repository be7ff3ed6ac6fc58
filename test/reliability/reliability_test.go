package reliability

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
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
// standby takes over, only once the lease the leader last renewed has
// lapsed, and every Website ends Ready, with exactly one Deployment and one
// Service. How soon it takes over is the product's target (under 20 s: a
// 15 s lease and a standby that retries every 1–2.2 s), for a benchmark to
// measure on a quiet machine; here the bound is what a busy two-core machine
// meets.
func TestLeaderFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	holder := leaseHolder(t, env, "", 30*time.Second) // the first operator's, the only one yet
	_, err := env.StartOperator(ctx, operatorArgs...)
	g.Expect(err).NotTo(HaveOccurred())
	newNamespace(t, env, "burst")

	type kill struct {
		at     time.Time
		leader string                // the identity of the process killed
		lease  *coordinationv1.Lease // as it left it
		err    error
	}
	getLease := func() (*coordinationv1.Lease, error) {
		return env.Clientset.CoordinationV1().Leases(devenv.OperatorNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	}
	var once sync.Once
	killed := make(chan kill, 1)
	g.Expect(createWebsites(ctx, env.Client, "burst", 200, func(created int) {
		if created < 50 {
			return
		}
		once.Do(func() {
			var k kill
			defer func() { killed <- k }()
			lease, err := getLease()
			if err != nil || lease.Spec.HolderIdentity == nil {
				k.err = fmt.Errorf("the Lease before the kill: %v, %+v", err, lease)
				return
			}
			// On two cores the burst can delay a renewal past its
			// deadline, so that the standby leads already: kill it then.
			k.leader = *lease.Spec.HolderIdentity
			victim := env.Operators()[0]
			if k.leader != holder {
				victim = env.Operators()[1]
			}
			victim.Kill()
			k.at = time.Now()
			k.lease, k.err = getLease()
		})
	})).To(Succeed())
	k := <-killed
	g.Expect(k.err).NotTo(HaveOccurred())
	if k.leader != holder {
		t.Logf("leadership changed hands during the burst, before the kill: the standby %s was the leader killed", k.leader)
	}
	g.Expect(k.lease.Spec.HolderIdentity).To(HaveValue(Equal(k.leader)), "the killed process held the lease")
	g.Expect(k.lease.Spec.RenewTime).NotTo(BeNil())
	lapsed := k.lease.Spec.RenewTime.Add(time.Duration(*k.lease.Spec.LeaseDurationSeconds) * time.Second)

	newHolder := leaseHolder(t, env, k.leader, takeoverTimeout)
	takeover := time.Since(k.at)
	lease, err := env.Clientset.CoordinationV1().Leases(devenv.OperatorNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lease.Spec.AcquireTime).NotTo(BeNil())
	t.Logf("standby %s took over %s after the leader was killed, %s after the lease it last renewed lapsed",
		newHolder, takeover.Round(100*time.Millisecond), lease.Spec.AcquireTime.Sub(lapsed).Round(100*time.Millisecond))
	// Never two leaders: the lease is taken only once the last renewal's
	// duration has passed (a renewal the killed leader sent as it died can
	// only make this later).
	g.Expect(lease.Spec.AcquireTime.Time).To(BeTemporally(">=", lapsed), "acquired after the lease lapsed")

	converged := waitAllReady(t, env.Client, "burst", 200, 3*time.Minute)
	t.Logf("all 200 Websites Ready %s after the takeover", converged.Round(100*time.Millisecond))
	checkOneOfEachChild(g, ctx, env.Client, "burst", 200)
}

// takeoverTimeout bounds the wait for the standby to take over in
// TestLeaderFailover: three times the 20 s the product promises, which a
// machine busy with the rest of the suite still meets. The promise itself is
// a benchmark's to measure.
const takeoverTimeout = time.Minute

// Scenario 1, continued. A leader that is frozen (SIGSTOP, as in a long
// pause) loses its lease to the standby; when it wakes up it sends no write
// at all, not even an event, and exits, for its pod to restart. A proxy
// between it and the API server sees every request it sends.
func TestOldLeaderWritesNothingAfterLosingTheLease(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, true)
	proxy := startRecordingProxy(t, env)
	old := startOperatorProcess(t, env, "old-leader", proxy.kubeconfig(t, env, "old-leader"), false)
	g.Expect(old.current().WaitReady(ctx, time.Minute)).To(Succeed())
	holder := leaseHolder(t, env, "", 30*time.Second)
	standby := startOperatorProcess(t, env, "standby", serviceAccountKubeconfig(t, env, "standby"), false)
	g.Expect(standby.current().WaitReady(ctx, time.Minute)).To(Succeed())
	newNamespace(t, env, "work")
	g.Expect(createWebsites(ctx, env.Client, "work", 20, nil)).To(Succeed())
	waitAllReady(t, env.Client, "work", 20, time.Minute)
	g.Expect(proxy.writesSince(time.Time{})).NotTo(BeEmpty(), "the proxy sees the leader's writes")

	g.Expect(syscall.Kill(old.current().PID(), syscall.SIGSTOP)).To(Succeed())
	leaseHolder(t, env, holder, 45*time.Second)
	// Work for the new leader, and watch events that reach the old one when
	// it wakes up: every Website changes.
	for i := range 20 {
		name := websiteName(i)
		g.Expect(env.Client.Patch(ctx, &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: "work", Name: name}},
			client.RawPatch(types.MergePatchType, []byte(`{"spec":{"image":"nginx:1.27"}}`)))).To(Succeed())
	}
	waitAllReady(t, env.Client, "work", 20, time.Minute)

	resumed := time.Now()
	g.Expect(syscall.Kill(old.current().PID(), syscall.SIGCONT)).To(Succeed())
	g.Eventually(old.current().Done()).WithTimeout(30*time.Second).Should(BeClosed(), "the old leader exits once it notices")
	exited, err := old.current().Exited()
	g.Expect(exited).To(BeTrue())
	g.Expect(err).To(HaveOccurred(), "a non-zero exit, for the pod to restart")
	log := devenv.TailFile(old.logPath, 2000)
	g.Expect(log).To(ContainSubstring("leader election lost"))
	t.Logf("the old leader exited %s after it woke up; writes it refused meanwhile: %d",
		time.Since(resumed).Round(100*time.Millisecond), strings.Count(log, "not the leader"))
	g.Expect(proxy.writesSince(resumed)).To(BeEmpty(), "the old leader sent writes after it woke up")
	events, err := env.Kubectl(ctx, "get", "events.events.k8s.io", "-n", "work", "-o", "jsonpath={range .items[*]}{.note}{\"\\n\"}{end}")
	g.Expect(err).NotTo(HaveOccurred(), events)
	g.Expect(events).NotTo(ContainSubstring("not the leader"), "no event about the refused writes")
}

// Scenario 2. kube-apiserver stops for 60 s in the middle of a burst (etcd
// keeps the data), with two replicas as deploy/ runs them. Every replica
// answers /healthz throughout and says in /readyz why it is not ready; the
// leader's lease lapses, so it exits and is restarted (as the kubelet would)
// and waits for the API server; nothing spins; once the API server is back
// every replica is ready and every child is made within 60 s. (How soon the
// Deployments are available depends on kube-controller-manager, whose
// watches back off during the outage.)
func TestAPIServerOutage(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, true)
	first := startOperatorProcess(t, env, "first", serviceAccountKubeconfig(t, env, "first"), true)
	g.Expect(first.current().WaitReady(ctx, time.Minute)).To(Succeed())
	leaseHolder(t, env, "", 30*time.Second)
	second := startOperatorProcess(t, env, "second", serviceAccountKubeconfig(t, env, "second"), true)
	g.Expect(second.current().WaitReady(ctx, time.Minute)).To(Succeed())
	newNamespace(t, env, "burst")
	g.Expect(createWebsites(ctx, env.Client, "burst", 200, nil)).To(Succeed())

	sampling := sampleProbes(t, 500*time.Millisecond, first, second)
	cpuBefore := map[string]float64{}
	pidBefore := map[string]int{}
	for _, p := range []*operatorProcess{first, second} {
		pidBefore[p.name] = p.current().PID()
		var err error
		cpuBefore[p.name], err = cpuSeconds(pidBefore[p.name])
		g.Expect(err).NotTo(HaveOccurred())
	}
	stopping := time.Now()
	g.Expect(env.Cluster.StopComponent(localcluster.APIServer)).To(Succeed())
	down := time.Now()
	t.Logf("kube-apiserver took %s to stop", down.Sub(stopping).Round(100*time.Millisecond))
	time.Sleep(60 * time.Second)
	for _, p := range []*operatorProcess{first, second} {
		cpu, err := cpuSeconds(p.current().PID())
		g.Expect(err).NotTo(HaveOccurred())
		if p.current().PID() == pidBefore[p.name] {
			cpu -= cpuBefore[p.name]
		}
		t.Logf("operator %s: CPU during the 60 s outage %.2f s (of its current process)", p.name, cpu)
		g.Expect(cpu).To(BeNumerically("<", 3), "no busy retry loop")
	}
	g.Expect(env.Cluster.StartComponent(localcluster.APIServer)).To(Succeed())
	up := time.Now()

	readyAfter := map[string]time.Duration{}
	g.Eventually(func(g Gomega) {
		for _, p := range []*operatorProcess{first, second} {
			if _, ok := readyAfter[p.name]; ok {
				continue
			}
			status, body := devenv.HTTPGet(ctx, p.probesURL+"/readyz", "")
			g.Expect(status).To(Equal(http.StatusOK), "%s: %s", p.name, body)
			readyAfter[p.name] = time.Since(up)
		}
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	r := watchRecovery(t, env, "burst", 200, 3*time.Minute)
	samples := sampling()

	// The probes during the outage. A process that lost its lease stops its
	// servers as it shuts down, a moment before it exits: samples of that
	// moment belong to the restart, like those of its first second.
	exitsOf := map[string][]processExit{first.name: first.exitsSoFar(), second.name: second.exitsSoFar()}
	exiting := func(s probeSample) bool {
		for _, exit := range exitsOf[s.process] {
			if !exit.at.Before(s.at) && exit.at.Sub(s.at) < 3*time.Second {
				return true
			}
		}
		return false
	}
	var restarting int
	alive := map[string]int{}
	reasons := map[string]bool{}
	for _, s := range samples {
		if s.at.Before(down) || s.at.After(up) {
			continue
		}
		if s.starting || exiting(s) {
			restarting++
			continue
		}
		alive[s.process]++
		if s.readyz == http.StatusServiceUnavailable {
			reasons[strings.TrimSpace(s.body)] = true
		}
		g.Expect(s.healthz).To(Equal(http.StatusOK), "%s /healthz %.1f s into the outage", s.process, s.at.Sub(down).Seconds())
		if s.at.Sub(down) > time.Second {
			g.Expect(s.readyz).To(Equal(http.StatusServiceUnavailable), "%s /readyz %.1f s into the outage: %s", s.process, s.at.Sub(down).Seconds(), s.body)
			g.Expect(s.body).To(HavePrefix("not ready: "))
			g.Expect(s.body).To(ContainSubstring(env.Cluster.Server()), "it names the API server it waits for")
		}
	}
	t.Logf("during the outage: probe samples of running processes %v, all /healthz 200 and /readyz 503; %d taken while a process restarted; reasons given:\n  %s",
		alive, restarting, strings.Join(keys(reasons), "\n  "))
	// Throughout: every replica answered often enough to tell, a third of
	// the samples that 60 s at 500 ms allow, as the leader's restart costs a
	// few.
	for _, p := range []*operatorProcess{first, second} {
		g.Expect(alive[p.name]).To(BeNumerically(">=", 40), "samples of operator %s running during the outage", p.name)
	}

	// Only the leader exits during the outage: its lease lapsed. The standby
	// never held one. (On two cores, the burst before the outage can delay a
	// renewal past the deadline, so that leadership changes hands before
	// the outage; such an exit is reported, and is not the outage's.)
	var exits []processExit
	for _, p := range []*operatorProcess{first, second} {
		for _, exit := range p.exitsSoFar() {
			if exit.at.Before(stopping) {
				t.Logf("operator %s exited %.1f s before the outage (%v): leadership changed hands during the burst", p.name, stopping.Sub(exit.at).Seconds(), exit.err)
				continue
			}
			exits = append(exits, exit)
			t.Logf("operator %s exited %.1f s after kube-apiserver began to stop: %v", p.name, exit.at.Sub(stopping).Seconds(), exit.err)
		}
	}
	g.Expect(exits).To(HaveLen(1), "the leader exits once during the outage, the standby never")
	g.Expect(exits[0].err).To(HaveOccurred(), "a non-zero exit")
	g.Expect(exits[0].at.Sub(stopping)).To(BeNumerically("<", 20*time.Second), "when its lease lapsed")
	t.Logf("the leader exited %.1f s after kube-apiserver began to stop, and was restarted; after the API server came back, ready after %v",
		exits[0].at.Sub(stopping).Seconds(), roundAll(readyAfter))

	t.Logf("after kube-apiserver started again: every Deployment and Service exists after %s (the operator's part), "+
		"every Deployment is available after %s (kube-controller-manager's), every Website Ready after %s",
		r.children.Round(100*time.Millisecond), r.available.Round(100*time.Millisecond), r.ready.Round(100*time.Millisecond))
	g.Expect(r.children).To(BeNumerically("<", 60*time.Second), "the operator catches up within 60 s")
	// Ready waits for the Services' EndpointSlices, which
	// kube-controller-manager updates after the Deployments once it is back
	// (14 s after them in one run): the gap is kube-controller-manager's and
	// is logged above; watchRecovery asserts that every Website gets Ready.
	checkOneOfEachChild(g, ctx, env.Client, "burst", 200)
}

// Scenario 2, continued. An operator started while the API server is down
// waits for it: alive, and saying why it is not ready; once the API server
// is up it becomes ready and works.
func TestOperatorStartedBeforeTheAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, true)
	kubeconfig := serviceAccountKubeconfig(t, env, "early")
	g.Expect(env.Cluster.StopComponent(localcluster.APIServer)).To(Succeed())
	early := startOperatorProcess(t, env, "early", kubeconfig, false)
	sampling := sampleProbes(t, 500*time.Millisecond, early)
	time.Sleep(20 * time.Second)
	g.Expect(env.Cluster.StartComponent(localcluster.APIServer)).To(Succeed())
	up := time.Now()
	g.Expect(early.current().WaitReady(ctx, time.Minute)).To(Succeed())
	readyAfter := time.Since(up)
	samples := sampling()

	waiting := "not ready: waiting for the API server at " + env.Cluster.Server() + ": "
	var before int
	for _, s := range samples {
		if s.starting {
			continue
		}
		g.Expect(s.healthz).To(Equal(http.StatusOK), "/healthz %.1f s after the start", s.at.Sub(samples[0].at).Seconds())
		if s.at.Before(up) {
			before++
			g.Expect(s.readyz).To(Equal(http.StatusServiceUnavailable))
			g.Expect(s.body).To(HavePrefix(waiting))
			g.Expect(s.body).To(ContainSubstring("connection refused"))
		}
	}
	g.Expect(before).To(BeNumerically(">=", 30), "samples while the API server was down")
	exited, _ := early.current().Exited()
	g.Expect(exited).To(BeFalse())
	t.Logf("%d samples while the API server was down: /healthz 200, /readyz 503 %q…; ready %s after the API server started",
		before, waiting, readyAfter.Round(100*time.Millisecond))

	// It works: children made and status written. (Ready also needs
	// kube-controller-manager, whose watches back off during the outage.)
	newNamespace(t, env, "late")
	g.Expect(createWebsites(ctx, env.Client, "late", 5, nil)).To(Succeed())
	g.Eventually(func(g Gomega) {
		checkOneOfEachChild(g, ctx, env.Client, "late", 5)
		var websites websitev1.WebsiteList
		g.Expect(env.Client.List(ctx, &websites, client.InNamespace("late"))).To(Succeed())
		for _, w := range websites.Items {
			g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation), w.Name)
		}
	}).WithTimeout(time.Minute).Should(Succeed())
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func roundAll(m map[string]time.Duration) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.Round(100 * time.Millisecond).String()
	}
	return out
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
// reconciles, alternately with a merge patch (kubectl patch) and with a full
// update of what they read, retried on conflict (kubectl edit, a client's
// read-modify-write): every write is accepted, no field is lost (the last
// write wins, and a field no write touched keeps its value), the final state
// matches the last spec, and status never shows an error.
func TestConcurrentUpdates(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	newNamespace(t, env, "busy")
	w := websitetest.Website(websiteName(0), "busy", websitetest.WithEnv("MODE", "prod"))
	w.UID, w.Generation = "", 0
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	key := client.ObjectKeyFromObject(w)

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
	var last, updates, conflicts, mostTries int
	for i := 1; i <= 500; i++ {
		<-ticker.C
		image, replicas := fmt.Sprintf("nginx:1.25-%d", i), int32(i%3+1)
		if i%2 == 1 {
			patch := fmt.Sprintf(`{"spec":{"image":%q,"replicas":%d}}`, image, replicas)
			g.Expect(env.Client.Patch(ctx, &websitev1.Website{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}},
				client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed(), "merge patch %d", i)
		} else {
			tries := 0
			err := retry.RetryOnConflict(updateRetry, func() error {
				tries++
				current := &websitev1.Website{}
				if err := env.Client.Get(ctx, key, current); err != nil {
					return err
				}
				current.Spec.Image, current.Spec.Replicas = image, &replicas
				return env.Client.Update(ctx, current)
			})
			g.Expect(err).NotTo(HaveOccurred(), "update %d, after %d conflicts", i, tries-1)
			updates++
			conflicts += tries - 1
			mostTries = max(mostTries, tries)
		}
		last = i
	}
	ticker.Stop()
	t.Logf("%d merge patches and %d full updates; the updates met %d conflicts, each retried (at most %d tries of %d for one update)",
		last-updates, updates, conflicts, mostTries, updateRetry.Steps)

	wantImage, wantReplicas := fmt.Sprintf("nginx:1.25-%d", last), int32(last%3+1)
	g.Eventually(func(g Gomega) {
		w := &websitev1.Website{}
		g.Expect(env.Client.Get(ctx, key, w)).To(Succeed())
		g.Expect(w.Spec.Image).To(Equal(wantImage), "the last write wins")
		g.Expect(w.Spec.Replicas).To(HaveValue(Equal(wantReplicas)))
		g.Expect(w.Spec.Env).To(ConsistOf(websitev1.EnvVar{Name: "MODE", Value: "prod"}), "a field no write touched")
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
		g.Expect(meta.IsStatusConditionTrue(w.Status.Conditions, websitev1.ReadyCondition)).To(BeTrue())
		d := &appsv1.Deployment{}
		g.Expect(env.Client.Get(ctx, key, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(wantImage))
		g.Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "MODE", Value: "prod"}))
		g.Expect(d.Spec.Replicas).To(HaveValue(Equal(wantReplicas)))
	}).WithTimeout(time.Minute).Should(Succeed())
	close(stopWatching)
	<-watched
	g.Expect(problems).To(BeEmpty(), "conflicts are retried, never shown as errors")
}

// updateRetry is how TestConcurrentUpdates retries a full update that met
// a conflict (the operator's status write got in between): up to 10 times,
// from 10 ms, doubling, up to 1 s apart.
var updateRetry = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: time.Second}

// Scenario 6. Bad and hostile input is refused by the API server with a
// message naming the field; a Website that passes validation but cannot run
// ends Degraded, without a crash or a retry storm.
func TestHostileAndBadInput(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironment(t, false)
	newNamespace(t, env, "hostile")
	for i, tc := range websitetest.InvalidWebsites {
		obj := &unstructured.Unstructured{}
		doc := fmt.Sprintf("apiVersion: example.com/v1\nkind: Website\nmetadata: {name: bad-%d, namespace: hostile}\n%s", i, tc.Spec)
		g.Expect(yaml.Unmarshal([]byte(doc), &obj.Object)).To(Succeed(), tc.Name)
		err := env.Client.Create(ctx, obj)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", tc.Name, err)
		g.Expect(err.Error()).To(ContainSubstring(tc.Field), tc.Name)
	}

	w := websitetest.Website("ghost", "hostile", websitetest.WithImage("registry.invalid/does-not/exist:1"))
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
// reports it: what the roles of deploy/ grant. With the Website component
// alone: never Secrets, pod writes, escalate, bind or impersonate. With
// every component: the Tenant's rights ride along (Secrets, namespaces,
// bind), bind only on the ClusterRoles admin, edit and view, the
// PostgresCluster's rights (its pets: create, delete and the patch of their
// role labels, never update; the Lease of each cluster's primary, in any
// namespace), and still never escalate, impersonate or a wildcard.
func TestEffectiveRBAC(t *testing.T) {
	for _, install := range []struct {
		name       string
		components []string
		// secrets and bind are what the Tenant component adds, postgres
		// the pod and Lease writes of the PostgresCluster component.
		secrets, bind, postgres bool
	}{
		{"website component only", []string{"website"}, false, false, false},
		{"every component", nil, true, true, true},
	} {
		t.Run(install.name, func(t *testing.T) {
			checkEffectiveRBAC(t, install.components, install.secrets, install.bind, install.postgres)
		})
	}
}

func checkEffectiveRBAC(t *testing.T, components []string, secrets, bind, postgres bool) {
	g := NewWithT(t)
	ctx := t.Context()
	env := startEnvironmentWith(t, true, components)
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
			resource, verbs := fields[0], strings.Fields(strings.Trim(line[strings.LastIndexByte(line, '['):], "[]"))
			if !secrets {
				g.Expect(resource).NotTo(HavePrefix("secrets"), line)
			}
			g.Expect(resource).NotTo(Equal("*.*"), line)
			if resource == "pods" {
				want := []string{"get", "list", "watch"}
				if postgres {
					want = append(want, "create", "delete", "patch")
				}
				g.Expect(verbs).To(ConsistOf(want), line)
			}
			for _, forbidden := range []string{"escalate", "impersonate", "*"} {
				g.Expect(verbs).NotTo(ContainElement(forbidden), line)
			}
			if slices.Contains(verbs, "bind") {
				g.Expect(bind).To(BeTrue(), "bind is the Tenant component's: %s", line)
				g.Expect(resource).To(Equal("clusterroles.rbac.authorization.k8s.io"), line)
				g.Expect(line).To(MatchRegexp(`\[(admin|edit|view)( (admin|edit|view))*\]\s+\[bind\]`), "bind only on the roles Tenants may grant: %s", line)
			}
		}
		g.Expect(out).To(ContainSubstring("websites.example.com"))
		g.Expect(out).To(MatchRegexp(`deployments.apps\s.*\[create get list patch update watch\]`))
	}
	for _, check := range []struct {
		args    []string
		allowed bool
	}{
		{[]string{"get", "secrets", "-A"}, secrets},
		{[]string{"create", "namespaces"}, secrets},
		{[]string{"bind", "clusterroles/admin"}, bind},
		{[]string{"bind", "clusterroles/cluster-admin"}, false},
		{[]string{"escalate", "clusterroles"}, false},
		{[]string{"create", "pods", "-A"}, postgres},
		{[]string{"update", "pods", "-A"}, false},
		{[]string{"delete", "deployments", "-A"}, false},
		{[]string{"impersonate", "users"}, false},
		{[]string{"patch", "websites.example.com", "--subresource=status", "-A"}, true},
		{[]string{"update", "leases", "-n", devenv.OperatorNamespace}, true},
		{[]string{"update", "leases", "-n", "default"}, postgres},
	} {
		out, _ := env.Kubectl(ctx, append(append([]string{"auth", "can-i"}, check.args...), as)...)
		want := "no"
		if check.allowed {
			want = "yes"
		}
		// The answer is the last line, after any warning kubectl prints.
		lines := strings.Split(strings.TrimSpace(out), "\n")
		g.Expect(strings.TrimSpace(lines[len(lines)-1])).To(HavePrefix(want), "can-i %v: %s", check.args, out)
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
