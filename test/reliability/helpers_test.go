// Package reliability puts the operator through faults on the local cluster:
// leader failover, an API server outage, a crash in the middle of work,
// deletion while it is down, a storm of concurrent updates, hostile input,
// and a check of its effective RBAC. Each scenario has its own cluster and a
// bounded duration.
package reliability

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	websitev1 "example.com/platform-operator/api/v1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/localcluster"
	"example.com/platform-operator/internal/operator"
)

const repoRoot = "../.."

var (
	// scheme is the operator's, with the types of every kind it serves.
	scheme         *runtime.Scheme
	operatorBinary string
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The tests' own clients have nothing to log.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if scheme, err = operator.NewScheme(operator.Controllers()...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if testing.Short() {
		fmt.Println("reliability tests skipped in -short mode")
		os.Exit(0)
	}
	if os.Getenv(localcluster.BinDirEnv) == "" {
		fmt.Fprintf(os.Stderr, "%s is not set: run the tests with make test, which builds the control plane\n", localcluster.BinDirEnv)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "platform-operator-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	operatorBinary, err = devenv.BuildOperator(repoRoot, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startEnvironment starts a cluster of the test's own with the operator
// installed from deploy/, and stops it when the test ends; on failure it
// prints the end of each operator's log.
func startEnvironment(t *testing.T, deferOperator bool) *devenv.Environment {
	return startEnvironmentWith(t, deferOperator, nil)
}

// startEnvironmentWith is startEnvironment with only the given components of
// deploy/ installed (nil: all).
func startEnvironmentWith(t *testing.T, deferOperator bool, components []string) *devenv.Environment {
	t.Helper()
	env, err := devenv.StartEnvironment(t.Context(), devenv.EnvironmentOptions{
		RepoRoot:       repoRoot,
		Scheme:         scheme,
		Components:     components,
		OperatorBinary: operatorBinary,
		OperatorArgs:   operatorArgs,
		DeferOperator:  deferOperator,
		Cluster:        localcluster.Options{Logf: t.Logf},
	})
	if err != nil {
		t.Fatalf("start environment: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, op := range env.Operators() {
				t.Logf("the end of %s:\n%s", op.LogPath, devenv.TailFile(op.LogPath, 30))
			}
		}
		env.Stop()
	})
	return env
}

// operatorArgs are the flags of every operator the scenarios start: the
// writes are logged at --verbose, which some scenarios read.
var operatorArgs = []string{"--all-namespaces", "--verbose"}

func newNamespace(t *testing.T, env *devenv.Environment, name string) {
	t.Helper()
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

func websiteName(i int) string { return "site-" + strconv.Itoa(i) }

// createWebsites creates n Websites in ns with 8 clients at once, as a burst
// of kubectl applies would, and calls progress after each.
func createWebsites(ctx context.Context, c client.Client, ns string, n int, progress func(created int)) error {
	var (
		mu       sync.Mutex
		created  int
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				w := websitetest.Website(websiteName(i), ns)
				w.UID, w.Generation = "", 0
				err := c.Create(ctx, w)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("create %s: %w", w.Name, err)
				}
				created++
				count := created
				mu.Unlock()
				if progress != nil {
					progress(count)
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return firstErr
}

// readyCount counts the Websites of ns that are Ready for their current
// generation.
func readyCount(ctx context.Context, c client.Client, ns string) (ready, total int, err error) {
	var list websitev1.WebsiteList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		w := &list.Items[i]
		c := meta.FindStatusCondition(w.Status.Conditions, websitev1.ReadyCondition)
		if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation {
			ready++
		}
	}
	return ready, len(list.Items), nil
}

// notReady describes up to max Websites of ns that are not Ready.
func notReady(ctx context.Context, c client.Client, ns string, max int) string {
	var list websitev1.WebsiteList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var out []string
	for i := range list.Items {
		w := &list.Items[i]
		c := meta.FindStatusCondition(w.Status.Conditions, websitev1.ReadyCondition)
		if c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation {
			continue
		}
		if len(out) == max {
			break
		}
		out = append(out, fmt.Sprintf("  %s generation %d, status %+v", w.Name, w.Generation, w.Status))
	}
	return strings.Join(out, "\n")
}

// waitAllReady waits until n Websites of ns are Ready and returns how long
// that took.
func waitAllReady(t *testing.T, c client.Client, ns string, n int, timeout time.Duration) time.Duration {
	t.Helper()
	began := time.Now()
	var ready, total int
	var err error
	for time.Since(began) < timeout {
		ready, total, err = readyCount(t.Context(), c, ns)
		if err == nil && ready == n && total == n {
			return time.Since(began)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("after %s, %d of %d Websites (of %d wanted) Ready; last error: %v; some that are not:\n%s",
		timeout, ready, total, n, err, notReady(t.Context(), c, ns, 5))
	return 0
}

// checkOneOfEachChild checks that each of the n Websites of ns has exactly
// one Deployment and one Service, controlled by it, and nothing else exists.
func checkOneOfEachChild(g Gomega, ctx context.Context, c client.Client, ns string, n int) {
	var websites websitev1.WebsiteList
	g.Expect(c.List(ctx, &websites, client.InNamespace(ns))).To(Succeed())
	uids := map[string]string{}
	for _, w := range websites.Items {
		uids[w.Name] = string(w.UID)
	}
	var deployments appsv1.DeploymentList
	g.Expect(c.List(ctx, &deployments, client.InNamespace(ns))).To(Succeed())
	var services corev1.ServiceList
	g.Expect(c.List(ctx, &services, client.InNamespace(ns))).To(Succeed())
	g.Expect(deployments.Items).To(HaveLen(n))
	g.Expect(services.Items).To(HaveLen(n))
	for _, objs := range [][]metav1.Object{deploymentObjects(deployments.Items), serviceObjects(services.Items)} {
		for _, obj := range objs {
			owner := metav1.GetControllerOf(obj)
			g.Expect(owner).NotTo(BeNil(), obj.GetName())
			g.Expect(string(owner.UID)).To(Equal(uids[obj.GetName()]), obj.GetName())
		}
	}
}

func deploymentObjects(items []appsv1.Deployment) []metav1.Object {
	var out []metav1.Object
	for i := range items {
		out = append(out, &items[i])
	}
	return out
}

func serviceObjects(items []corev1.Service) []metav1.Object {
	var out []metav1.Object
	for i := range items {
		out = append(out, &items[i])
	}
	return out
}

// cpuSeconds is the CPU time a process has used, from /proc.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseCPUSeconds(string(data))
}

// parseCPUSeconds reads utime and stime, fields 14 and 15 of /proc/PID/stat
// (proc(5)), which come after the command name in parentheses (a name may
// hold spaces and parentheses itself), in clock ticks of 1/100 s
// (USER_HZ on Linux).
func parseCPUSeconds(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in /proc/PID/stat: %q", stat)
	}
	// From field 3, the state, on.
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name in /proc/PID/stat, want at least 13: %q", len(fields), stat)
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time in /proc/PID/stat: %w", err)
		}
		ticks += n
	}
	return float64(ticks) / 100, nil
}
