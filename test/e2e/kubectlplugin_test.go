package e2e

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/controller/website/websitetest"
	"example.com/platform-operator/internal/devenv"
	"example.com/platform-operator/internal/pgspec"
)

// The kubectl plugin, built once for the tests that run it.
var (
	pluginBinary  string
	pluginErr     error
	pluginBuild   sync.Once
	pluginTimeout = 5 * time.Minute
)

// kubectlPlatform runs the built kubectl-platform against e's cluster as
// its administrator, as a person would from a terminal, and returns what
// it printed, standard output and error together.
func (e *environment) kubectlPlatform(t *testing.T, args ...string) (string, error) {
	t.Helper()
	pluginBuild.Do(func() {
		dir, err := os.MkdirTemp("", "kubectl-platform-e2e-")
		if err != nil {
			pluginErr = err
			return
		}
		pluginBinary, pluginErr = devenv.BuildPlugin(repoRoot, dir)
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), pluginTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, pluginBinary, append([]string{"--kubeconfig", e.Cluster.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	t.Logf("$ kubectl platform %s\n%s", strings.Join(args, " "), out)
	return string(out), err
}

// mustPlatform is kubectlPlatform that fails the test when the command
// fails.
func (e *environment) mustPlatform(t *testing.T, args ...string) string {
	t.Helper()
	out, err := e.kubectlPlatform(t, args...)
	if err != nil {
		t.Fatalf("kubectl platform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// The plugin against a PostgresCluster of real PostgreSQL: status shows
// the primary and a streaming replica; psql reaches the primary and the
// replica through the API server's port-forward; a switchover moves the primary; a
// fence stops a replica and an unfence starts it again, each seen in the
// status the plugin shows and in the cluster's; fencing the primary is
// refused; a replica restarts in a new pod, the primary's restart is
// refused, and the whole cluster restarts rolling; a backup runs now and is listed, pinned and unpinned; the
// support bundle holds the cluster's objects but no password; hibernation
// deletes every pod, and the cluster comes back with its primary.
func TestKubectlPluginPostgres(t *testing.T) {
	g := NewWithT(t)
	env, ns := pgNamespace(t)
	env.newPostgresCluster(t, ns, "db", 2, 0, nil)
	env.waitPostgresReady(t, ns, "db", 2)

	out := env.mustPlatform(t, "pg", "status", "db", "-n", ns)
	g.Expect(out).To(ContainSubstring("PostgresCluster " + ns + "/db: Healthy"))
	g.Expect(out).To(MatchRegexp(`Primary:\s+db-1\n`))
	g.Expect(out).To(MatchRegexp(`db-1\s+primary\s+true\s+1\s+\S+\s+-\s+accepting writes`))
	g.Expect(out).To(MatchRegexp(`db-2\s+replica\s+true\s+1\s+\S+\s+\d.*streaming`))
	g.Expect(out).To(MatchRegexp(`Ready\s+True\s+Available`))
	g.Expect(out).To(ContainSubstring("Backups: no BackupJob has this cluster as its source"))

	// psql through the API server's port-forward (kwok's, to the pod's
	// network namespace), as the application's owner, over verified TLS:
	// on the primary, then on the replica.
	psql := filepath.Join(pgspec.BinDir, "psql")
	out = env.mustPlatform(t, "pg", "psql", "db", "-n", ns, "--psql", psql, "--",
		"-XAtc", "SELECT pg_is_in_recovery(), current_user, (SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid())")
	g.Expect(out).To(MatchRegexp(`(?m)^f\|app\|t$`), "psql on the primary")
	out = env.mustPlatform(t, "pg", "psql", "db", "--replica", "-n", ns, "--psql", psql, "--", "-XAtc", "SELECT pg_is_in_recovery()")
	g.Expect(out).To(MatchRegexp(`(?m)^t$`), "psql on the replica")

	// No BackupJob yet: a backup now says what is missing.
	out, err := env.kubectlPlatform(t, "pg", "backup", "db", "-n", ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("no BackupJob backs up PostgresCluster db"))

	// A switchover to the only replica, waited for.
	out = env.mustPlatform(t, "pg", "switchover", "db", "-n", ns, "--wait", "--timeout", "3m")
	g.Expect(out).To(ContainSubstring("switching over from db-1 to db-2"))
	g.Expect(out).To(ContainSubstring("db-2 is the primary"))
	pg := env.postgresCluster(g, ns, "db")
	g.Expect(pg.Spec.Primary).To(Equal("db-2"))
	g.Expect(pg.Status.CurrentPrimary).To(Equal("db-2"))
	g.Eventually(func(g Gomega) {
		out, err := env.kubectlPlatform(t, "pg", "status", "db", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`Primary:\s+db-2\n`))
		g.Expect(out).To(MatchRegexp(`db-1\s+replica\s+true\s+2\s+.*streaming`))
	}).WithTimeout(pgTimeout).WithPolling(2*time.Second).Should(Succeed(), "db-1 a streaming replica of db-2 on timeline 2")

	// The primary is not fenced without --allow-primary.
	out, err = env.kubectlPlatform(t, "pg", "fence", "db", "db-2", "-n", ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("db-2 is the primary of db"))
	g.Expect(env.postgresCluster(g, ns, "db").Spec.FencedInstances).To(BeEmpty())

	// Fence the replica: its PostgreSQL stops; unfence: it streams again.
	out = env.mustPlatform(t, "pg", "fence", "db", "db-1", "-n", ns, "--wait", "--timeout", "3m")
	g.Expect(out).To(ContainSubstring("fenced db-1"))
	pg = env.postgresCluster(g, ns, "db")
	g.Expect(pg.Spec.FencedInstances).To(Equal([]string{"db-1"}))
	g.Expect(instanceStatus(pg, "db-1").Fenced).To(BeTrue())
	out = env.mustPlatform(t, "pg", "status", "db", "-n", ns)
	g.Expect(out).To(ContainSubstring("Fenced:      db-1 (spec.fencedInstances)"))
	g.Expect(out).To(MatchRegexp(`db-1\s+.*fenced`))

	out = env.mustPlatform(t, "pg", "unfence", "db", "db-1", "-n", ns, "--wait", "--timeout", "3m")
	g.Expect(out).To(ContainSubstring("unfenced db-1"))
	pg = env.postgresCluster(g, ns, "db")
	g.Expect(pg.Spec.FencedInstances).To(BeEmpty())
	g.Expect(instanceStatus(pg, "db-1").Ready).To(BeTrue())

	// A restart of the replica: a new pod, ready again; the primary's is
	// refused.
	before := &corev1.Pod{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "db-1"}, before)).To(Succeed())
	out = env.mustPlatform(t, "pg", "restart", "db", "db-1", "-n", ns, "--wait", "--timeout", "3m")
	g.Expect(out).To(ContainSubstring("db-1 is ready again"))
	after := &corev1.Pod{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "db-1"}, after)).To(Succeed())
	g.Expect(after.UID).NotTo(Equal(before.UID), "db-1's pod made again")
	out, err = env.kubectlPlatform(t, "pg", "restart", "db", "db-2", "-n", ns)
	g.Expect(err).To(HaveOccurred())
	g.Expect(out).To(ContainSubstring("db-2 is the primary of db"))
	env.waitPostgresReady(t, ns, "db", 2)

	// A rolling restart of the whole cluster: both pods made again, the
	// primary's after a switchover, and the cluster ready.
	uids := map[string]types.UID{}
	for _, name := range []string{"db-1", "db-2"} {
		pod := &corev1.Pod{}
		g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
		uids[name] = pod.UID
	}
	out = env.mustPlatform(t, "pg", "restart", "db", "-n", ns, "--wait", "--timeout", "4m")
	g.Expect(out).To(ContainSubstring("every instance of db restarted and ready"))
	for name, uid := range uids {
		pod := &corev1.Pod{}
		g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, pod)).To(Succeed())
		g.Expect(pod.UID).NotTo(Equal(uid), "%s's pod made again", name)
	}
	env.waitPostgresReady(t, ns, "db", 2)

	// A backup now, by the BackupJob of the cluster: a base backup.
	env.newPostgresBackupJobTo(t, ns, "db-backup", "db", false, nil, func(bj *v1alpha1.BackupJob) { bj.Spec.RunNow = "" })
	out = env.mustPlatform(t, "pg", "backup", "db", "-n", ns, "--wait", "--timeout", "3m")
	g.Expect(out).To(MatchRegexp(`backupjob/db-backup: run (db-backup-\d+) Succeeded`))
	run := regexpGroup(out, `run (db-backup-\d+) Succeeded`)

	// A second run by the BackupJob's own command.
	time.Sleep(time.Second) // runNow takes a new value per second
	out = env.mustPlatform(t, "bj", "run", "db-backup", "-n", ns, "--wait", "--timeout", "3m")
	g.Expect(out).To(MatchRegexp(`backupjob/db-backup: run db-backup-\d+ Succeeded`))

	out = env.mustPlatform(t, "bj", "list", "db-backup", "-n", ns)
	g.Expect(out).To(ContainSubstring("BackupJob " + ns + "/db-backup: PostgresCluster db into new volumes"))
	g.Expect(strings.Count(out, " Succeeded ")).To(Equal(2), "two successful backups listed")
	g.Expect(out).To(MatchRegexp(run + `\s+Succeeded\s+\S+\s+\S+\s+false`))

	env.mustPlatform(t, "bj", "pin", "db-backup", run, "-n", ns)
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(env.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: run}, claim)).To(Succeed())
	g.Expect(claim.Labels).To(HaveKeyWithValue(v1alpha1.PinnedLabel, "true"))
	g.Expect(env.mustPlatform(t, "bj", "list", "db-backup", "-n", ns)).To(MatchRegexp(run + `\s+Succeeded\s+\S+\s+\S+\s+true`))
	env.mustPlatform(t, "bj", "unpin", "db-backup", run, "-n", ns)
	g.Expect(env.mustPlatform(t, "bj", "list", "db-backup", "-n", ns)).To(MatchRegexp(run + `\s+Succeeded\s+\S+\s+\S+\s+false`))

	out = env.mustPlatform(t, "pg", "status", "db", "-n", ns)
	g.Expect(out).To(MatchRegexp(`db-backup\s+\S+ ago\s+Succeeded\s+2\s`))

	// The support bundle: the cluster's objects and Secrets, no password.
	bundle := filepath.Join(t.TempDir(), "report.zip")
	env.mustPlatform(t, "pg", "report", "db", "-n", ns, "-f", bundle)
	files := readZip(t, bundle)
	for _, f := range []string{"db/postgrescluster.yaml", "db/pods.yaml", "db/persistentvolumeclaims.yaml", "db/secrets.yaml",
		"db/events.yaml", "db/backupjobs.yaml"} {
		g.Expect(files).To(HaveKey(f))
	}
	g.Expect(files["db/pods.yaml"]).To(ContainSubstring("name: db-2"))
	g.Expect(files["db/secrets.yaml"]).To(ContainSubstring("name: db-app"))
	g.Expect(files["db/events.yaml"]).To(ContainSubstring("SwitchoverStarted"))
	password := env.appSecret(g, ns, "db")["password"]
	for name, data := range files {
		g.Expect(data).NotTo(ContainSubstring(password), "%s holds the application's password", name)
	}

	// Hibernation: every pod goes, the claims stay; back with its primary.
	env.mustPlatform(t, "pg", "hibernate", "db", "on", "-n", ns, "--wait", "--timeout", "3m")
	var pods corev1.PodList
	g.Expect(env.Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.PostgresClusterLabel: "db"})).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty(), "no pod of a hibernating cluster")
	g.Expect(env.mustPlatform(t, "pg", "status", "db", "-n", ns)).To(ContainSubstring("PostgresCluster " + ns + "/db: Hibernated"))
	env.mustPlatform(t, "pg", "hibernate", "db", "off", "-n", ns, "--wait", "--timeout", "3m")
	out = env.mustPlatform(t, "pg", "status", "db", "-n", ns)
	g.Expect(out).To(MatchRegexp(`Primary:\s+db-2\n`))
	g.Expect(out).To(MatchRegexp(`Ready\s+True\s+Available`))
}

// The plugin's Website status: what kubectl get shows, then why the
// Website is not Ready, the cause Degraded names; Ready once it serves.
// And a Tenant's kubeconfig, written to a file, authenticates as its
// ServiceAccount.
func TestKubectlPluginWebsiteAndTenant(t *testing.T) {
	g := NewWithT(t)
	e := shared
	ns := e.newNamespace(t, nil)

	// kwok never starts images from the reserved .invalid domain.
	w := websitetest.Website("shop", ns, websitetest.WithImage("registry.invalid/team/shop:1.0"))
	w.UID, w.Generation = "", 0
	g.Expect(e.Client.Create(t.Context(), w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		out, err := e.kubectlPlatform(t, "website", "status", "shop", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`shop\s+registry.invalid/team/shop:1.0\s+0/1\s+ImagePullFailed\s+http://shop\.` + ns))
		g.Expect(out).To(ContainSubstring("Not Ready because ImagePullFailed:"))
		g.Expect(out).To(MatchRegexp(`Degraded\s+True\s+ImagePullFailed`))
	}).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())

	out, err := e.Kubectl(t.Context(), "patch", "-n", ns, "website/shop", "--type=merge", "-p", `{"spec":{"image":"nginx:1.25"}}`)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		out, err := e.kubectlPlatform(t, "ws", "status", "shop", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`shop\s+nginx:1.25\s+1/1\s+Available`))
		g.Expect(out).To(ContainSubstring("Ready (Available): serving at http://shop." + ns))
	}).WithTimeout(timeout).WithPolling(2 * time.Second).Should(Succeed())

	e.requireTenantAPI(t)
	home := fmt.Sprintf("e2e-plugin-%d", namespaceCounter.Add(1))
	tn := e.tenantFor(t, "alice@example.com", home)
	e.eventuallyTenantReady(t, tn.Name)
	file := filepath.Join(t.TempDir(), "tenant.kubeconfig")
	out = e.mustPlatform(t, "tenant", "kubeconfig", tn.Name, "-f", file)
	g.Expect(out).To(ContainSubstring("Wrote " + file))
	info, err := os.Stat(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)))
	who, err := e.Kubectl(t.Context(), "--kubeconfig", file, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	g.Expect(err).NotTo(HaveOccurred(), who)
	g.Expect(who).To(Equal("system:serviceaccount:" + home + ":tenant"))
}

func regexpGroup(s, pattern string) string {
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if len(m) < 2 {
		return ""
	}
	return m[1]
}

// readZip is the files of a zip by name.
func readZip(t *testing.T, path string) map[string]string {
	t.Helper()
	r, err := zip.OpenReader(path)
	if err != nil {
		t.Fatalf("open the bundle: %v", err)
	}
	defer r.Close()
	files := map[string]string{}
	for _, f := range r.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = string(data)
	}
	return files
}
