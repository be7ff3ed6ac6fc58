package localcluster_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/localcluster"
)

// The pods of a PostgreSQL cluster run their instance manager (here the
// fake of testdata/fakeinstance) as the postgres user, each in a network
// namespace of its own, with the container's environment, a hosts file
// that names the other pods, and a token of its own ServiceAccount; the
// simulation restarts one that exits and kills the PostgreSQL server alone
// on request; a pod cut off reaches neither the API server nor the other
// pod until it is reconnected; and stopping the cluster leaves nothing
// behind.
func TestPostgresPodsRunTheirInstanceManager(t *testing.T) {
	g := NewWithT(t)
	f := startPostgresCluster(t)
	cluster, c, ctx := f.cluster, f.c, t.Context()
	postgres, err := user.Lookup("postgres")
	g.Expect(err).NotTo(HaveOccurred())

	for _, name := range []string{"db-1", "db-2"} {
		g.Expect(c.Create(ctx, pgClaim(name))).To(Succeed())
	}
	g.Expect(c.Create(ctx, pgPod("db-1", withPeers("db-2")))).To(Succeed())
	g.Eventually(func(g Gomega) {
		s := f.status(g, "db-1")
		g.Expect(s.API).To(Equal("ok"))
		g.Expect(s.Peers[pgDNSName("db-2")+":5432"].Addrs).To(BeEmpty(), "no pod db-2 yet")
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(c.Create(ctx, pgPod("db-2", withPeers("db-1")))).To(Succeed())

	// Each reaches the API server with its token and the other by its DNS
	// name, which resolves to the other's namespace address: db-1's hosts
	// file was rewritten when db-2 came.
	var addr1, addr2 string
	g.Eventually(func(g Gomega) {
		addr1, addr2 = f.address(g, "db-1"), f.address(g, "db-2")
		for _, pod := range []struct{ self, selfAddr, peer, peerAddr string }{{"db-1", addr1, "db-2", addr2}, {"db-2", addr2, "db-1", addr1}} {
			s := f.status(g, pod.self)
			g.Expect(s.API).To(Equal("ok"))
			g.Expect(s.Annotated).To(BeTrue())
			peer := s.Peers[pgDNSName(pod.peer)+":5432"]
			g.Expect(peer.Addrs).To(Equal([]string{pod.peerAddr}))
			g.Expect(peer.Name).To(Equal(pod.peer), "error: %s", peer.Error)
			for _, a := range s.Addrs {
				if ip := net.ParseIP(strings.Split(a, "/")[0]); ip.To4() != nil {
					g.Expect(ip.String()).To(BeElementOf("127.0.0.1", pod.selfAddr), "the namespace has its own address and loopback only")
				}
			}
		}
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	g.Expect(addr1).NotTo(Equal(addr2))
	pid1, err := cluster.PostgresProcessPID("default", "db-1")
	g.Expect(err).NotTo(HaveOccurred())
	getent, err := exec.Command("nsenter", "-t", strconv.Itoa(pid1), "-m", "-n", "getent", "hosts", pgDNSName("db-2")).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s", getent)
	g.Expect(strings.Fields(string(getent))).To(HaveExactElements(addr2, pgDNSName("db-2"), "db-2.db.default.svc", "db-2.db.default", "db-2.db"),
		"the C library resolves it too, as PostgreSQL would")

	pid, err := cluster.PostgresProcessPID("default", "db-1")
	g.Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db-1"}, pod)).To(Succeed())
	g.Expect(pod.Annotations).To(HaveKeyWithValue("fake.example.com/started", strconv.Itoa(pid)), "patched through the pod's own kubeconfig")
	claims := tokenClaims(t, pid)
	g.Expect(claims.Subject).To(Equal("system:serviceaccount:default:db"))
	g.Expect(claims.Kubernetes.Pod.Name).To(Equal("db-1"))
	g.Expect(claims.Kubernetes.Pod.UID).To(Equal(string(pod.UID)), "the token is bound to the pod")

	// The process: the postgres user, its own namespace, the container's
	// environment with the host's paths.
	g.Expect(procStatusField(t, pid, "Uid")).To(HavePrefix(postgres.Uid + "\t"))
	netns, err := exec.Command("ip", "netns", "identify", strconv.Itoa(pid)).Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.TrimSpace(string(netns))).To(HavePrefix("pgsim"))
	env := procEnviron(t, pid)
	volume := f.volumeDir(g, "db-1")
	g.Expect(env).To(HaveKeyWithValue("POD_NAME", "db-1"))
	g.Expect(env).To(HaveKeyWithValue("POD_NAMESPACE", "default"))
	g.Expect(env).To(HaveKeyWithValue("POD_UID", string(pod.UID)))
	g.Expect(env).To(HaveKeyWithValue("CLUSTER_NAME", "db"))
	g.Expect(env).To(HaveKeyWithValue("GREETING", "hello db-1"), "$(VAR) references are expanded")
	g.Expect(env).To(HaveKeyWithValue("POD_IP", addr1))
	g.Expect(env).To(HaveKeyWithValue("PG_BIN_DIR", "/usr/lib/postgresql/15/bin"))
	g.Expect(env).To(HaveKeyWithValue("PGDATA", filepath.Join(volume, "pgdata")))
	for _, dir := range []string{volume, env["PG_SOCKET_DIR"]} {
		info, err := os.Stat(dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)), dir)
		g.Expect(strconv.Itoa(int(info.Sys().(*syscall.Stat_t).Uid))).To(Equal(postgres.Uid), dir)
	}
	g.Expect(filepath.Join(cluster.Dir(), "postgres", "default_db-1.log")).To(BeARegularFile())

	// The host reaches the pod at its address.
	g.Expect(readGreeting(addr1 + ":5432")).To(Equal("db-1"))

	// KillPostgres kills the server alone; a killed instance manager is
	// restarted.
	postmaster := f.postmasterPID(g, "db-1")
	g.Expect(cluster.KillPostgres("default", "db-1")).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(processGone(postmaster)).To(BeTrue())
		g.Expect(f.status(g, "db-1").Postmaster).To(HavePrefix("exited"))
	}).WithTimeout(10 * time.Second).Should(Succeed())
	g.Expect(cluster.PostgresProcessPID("default", "db-1")).To(Equal(pid))
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func(g Gomega) {
		restarted, err := cluster.PostgresProcessPID("default", "db-1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(restarted).NotTo(Equal(pid))
		g.Expect(f.history(g, "db-1")).To(HaveLen(2))
		g.Expect(readGreeting(addr1 + ":5432")).To(Equal("db-1"))
	}).WithTimeout(20 * time.Second).Should(Succeed())

	// Cut off, db-1 reaches neither the API server nor db-2, nor does db-2
	// reach it; reconnected, both do again.
	g.Expect(cluster.CutOffPostgres("default", "db-1")).To(Succeed())
	cut := time.Now()
	g.Eventually(func(g Gomega) {
		s1, s2 := f.status(g, "db-1"), f.status(g, "db-2")
		g.Expect(s1.Time).To(BeTemporally(">", cut.Add(time.Second)))
		g.Expect(s2.Time).To(BeTemporally(">", cut.Add(time.Second)))
		g.Expect(s1.API).NotTo(Equal("ok"))
		g.Expect(s1.Peers[pgDNSName("db-2")+":5432"].Error).NotTo(BeEmpty())
		g.Expect(s2.API).To(Equal("ok"))
		g.Expect(s2.Peers[pgDNSName("db-1")+":5432"].Error).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	_, err = readGreeting(addr1 + ":5432")
	g.Expect(err).To(HaveOccurred(), "the host does not reach it either")

	g.Expect(cluster.ReconnectPostgres("default", "db-1")).To(Succeed())
	reconnected := time.Now()
	g.Eventually(func(g Gomega) {
		s1, s2 := f.status(g, "db-1"), f.status(g, "db-2")
		g.Expect(s1.Time).To(BeTemporally(">", reconnected.Add(time.Second)))
		g.Expect(s1.API).To(Equal("ok"))
		g.Expect(s1.Peers[pgDNSName("db-2")+":5432"].Name).To(Equal("db-2"))
		g.Expect(s2.Peers[pgDNSName("db-1")+":5432"].Name).To(Equal("db-1"))
	}).WithTimeout(30 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())

	// Stopping the cluster leaves no process, namespace, veth or bridge.
	var pids []int
	var namespaces []string
	links := map[int]string{} // the veths' and the bridge's interface indexes
	for _, name := range []string{"db-1", "db-2"} {
		pid, err := cluster.PostgresProcessPID("default", name)
		g.Expect(err).NotTo(HaveOccurred())
		out, err := exec.Command("ip", "netns", "identify", strconv.Itoa(pid)).Output()
		g.Expect(err).NotTo(HaveOccurred())
		pids = append(pids, pid, f.postmasterPID(g, name))
		netns := strings.TrimSpace(string(out))
		namespaces = append(namespaces, netns)
		veth, err := net.InterfaceByName(netns)
		g.Expect(err).NotTo(HaveOccurred())
		links[veth.Index] = veth.Name
	}
	bridgeName, _, _ := strings.Cut(namespaces[0], "-")
	bridge, err := net.InterfaceByName(bridgeName)
	g.Expect(err).NotTo(HaveOccurred())
	links[bridge.Index] = bridge.Name
	// An open namespace keeps its inode, so that no namespace made since
	// can have it: a /run/netns entry with it is one the stop left.
	type inode struct{ dev, ino uint64 }
	inodeOf := func(info os.FileInfo) inode {
		st := info.Sys().(*syscall.Stat_t)
		return inode{st.Dev, st.Ino}
	}
	held := map[inode]string{}
	for _, netns := range namespaces {
		f, err := os.Open(filepath.Join("/run/netns", netns))
		g.Expect(err).NotTo(HaveOccurred())
		defer f.Close()
		info, err := f.Stat()
		g.Expect(err).NotTo(HaveOccurred())
		held[inodeOf(info)] = netns
	}
	g.Expect(cluster.Stop()).To(Succeed())
	for _, pid := range pids {
		g.Expect(processGone(pid)).To(BeTrue(), "process %d", pid)
	}
	entries, err := os.ReadDir("/run/netns")
	g.Expect(err).NotTo(HaveOccurred())
	var left []string
	for _, entry := range entries {
		info, err := os.Stat(filepath.Join("/run/netns", entry.Name()))
		if err != nil {
			continue // removed meanwhile, by another cluster
		}
		if netns, ok := held[inodeOf(info)]; ok {
			left = append(left, netns)
		}
	}
	g.Expect(left).To(BeEmpty(), "namespaces the stop left")
	// Interface indexes are not reused soon, so a link of the same name
	// made since is another's.
	for index, name := range links {
		iface, err := net.InterfaceByIndex(index)
		if err == nil {
			g.Expect(iface.Name).NotTo(Equal(name), "the link %s is gone", name)
		}
	}
	// The names are the slot's again once nobody holds it: another cluster
	// on this machine (a make test beside this one) may have claimed the
	// slot as soon as Stop released it, and made namespaces of these names.
	slot, err := strconv.Atoi(strings.TrimPrefix(bridgeName, "pgsim"))
	g.Expect(err).NotTo(HaveOccurred())
	lock, free := tryLockSlot(slot)
	if !free {
		t.Logf("slot %d was claimed again after the stop: its names are another cluster's now, checked by processes, links and namespaces, not by name", slot)
		return
	}
	defer lock.Close()
	out, err := exec.Command("ip", "netns", "list").Output()
	g.Expect(err).NotTo(HaveOccurred())
	for _, netns := range namespaces {
		g.Expect(strings.Fields(string(out))).NotTo(ContainElement(netns))
		_, err := net.InterfaceByName(netns)
		g.Expect(err).To(HaveOccurred(), "the veth %s is gone", netns)
		g.Expect(filepath.Join("/etc/netns", netns)).NotTo(BeAnExistingFile())
	}
	_, err = net.InterfaceByName(bridgeName)
	g.Expect(err).To(HaveOccurred(), "the bridge %s is gone", bridgeName)
}

// The proxy of a Service on loopback reaches the pod its selector selects,
// follows a change of labels, and closes the connections to a pod that
// left its endpoints; a Service without endpoints refuses; a headless one
// gets no proxy.
func TestPostgresServicesOnLoopback(t *testing.T) {
	g := NewWithT(t)
	f := startPostgresCluster(t)
	c, ctx := f.c, t.Context()

	for _, name := range []string{"db-1", "db-2"} {
		g.Expect(c.Create(ctx, pgClaim(name))).To(Succeed())
	}
	g.Expect(c.Create(ctx, pgPod("db-1", withLabel(v1alpha1.PostgresRoleLabel, v1alpha1.PostgresPrimaryRole)))).To(Succeed())
	g.Expect(c.Create(ctx, pgPod("db-2"))).To(Succeed())
	g.Expect(c.Create(ctx, pgService("db-rw", v1alpha1.PostgresPrimaryRole))).To(Succeed())
	g.Expect(c.Create(ctx, pgService("db-ro", v1alpha1.PostgresReplicaRole))).To(Succeed())

	rw, ro := f.serviceAddress(g, "db-rw"), f.serviceAddress(g, "db-ro")
	g.Expect(rw).To(HavePrefix("127.0.0.1:"))
	var conn net.Conn
	g.Eventually(func(g Gomega) {
		var err error
		conn, err = net.DialTimeout("tcp", rw, time.Second)
		g.Expect(err).NotTo(HaveOccurred())
		name, err := readLine(conn, 2*time.Second)
		if err != nil {
			conn.Close()
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(name).To(Equal("db-1"))
	}).WithTimeout(60 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	defer conn.Close()
	_, err := readGreeting(ro)
	g.Expect(err).To(HaveOccurred(), "db-ro selects no pod: its connections are closed at once")

	// A switch of the primary's label: the connection to db-1 is closed,
	// new ones reach db-2.
	f.setRole(g, "db-1", "")
	f.setRole(g, "db-2", v1alpha1.PostgresPrimaryRole)
	_, err = readLine(conn, 20*time.Second)
	g.Expect(err).To(HaveOccurred(), "the connection to the former primary is closed")
	g.Expect(err).NotTo(MatchError(ContainSubstring("timeout")))
	g.Eventually(func() (string, error) { return readGreeting(rw) }).WithTimeout(20 * time.Second).Should(Equal("db-2"))

	// The headless Service gets no proxy.
	svc := &corev1.Service{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "db"}, svc)).To(Succeed())
	g.Expect(svc.Annotations).NotTo(HaveKey(localcluster.SimulationAddressAnnotation))
}

// Deleting a pod stops its instance manager within the pod's grace period
// (SIGTERM, then SIGKILL) and the pod goes as soon as it has stopped; the
// data on its claim stays for the next pod, a grown claim reports its new
// capacity, and the folder goes with the claim's volume.
func TestPostgresPodDeletionAndClaims(t *testing.T) {
	g := NewWithT(t)
	f := startPostgresCluster(t)
	cluster, c, ctx := f.cluster, f.c, t.Context()
	key := client.ObjectKey{Namespace: "default", Name: "db-1"}

	g.Expect(c.Create(ctx, pgClaim("db-1"))).To(Succeed())
	g.Expect(c.Create(ctx, pgPod("db-1", withEnv("FAKE_IGNORE_SIGTERM", "true"), withGrace(3)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(f.status(g, "db-1").API).To(Equal("ok"))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	volume := f.volumeDir(g, "db-1")

	// The claim grows while the pod runs.
	claim := &corev1.PersistentVolumeClaim{}
	g.Expect(c.Get(ctx, key, claim)).To(Succeed())
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
	g.Expect(c.Update(ctx, claim)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key, claim)).To(Succeed())
		g.Expect(claim.Status.Capacity.Storage().String()).To(Equal("3Gi"))
		pv := &corev1.PersistentVolume{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv)).To(Succeed())
		g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("3Gi"))
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// An instance manager that ignores SIGTERM is killed once the grace
	// period of 3 s has passed since the deletion, as a kubelet counts it
	// (not by the deletion timestamp, which counts in whole seconds).
	pid, err := cluster.PostgresProcessPID("default", "db-1")
	g.Expect(err).NotTo(HaveOccurred())
	deleted := time.Now()
	g.Expect(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-1"}})).To(Succeed())
	g.Eventually(func() bool { return processGone(pid) }).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(BeTrue())
	stopped := time.Since(deleted)
	g.Expect(stopped).To(BeNumerically(">=", 3*time.Second), "SIGTERM was ignored: SIGKILL waits for the grace period")
	g.Expect(stopped).To(BeNumerically("<", 6*time.Second))
	g.Eventually(func() error { return c.Get(ctx, key, &corev1.Pod{}) }).WithTimeout(10 * time.Second).Should(Satisfy(apierrors.IsNotFound))

	// A new pod on the same claim finds the data; one that stops on
	// SIGTERM goes long before its grace period of 30 s.
	g.Expect(c.Create(ctx, pgPod("db-1", withGrace(30)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		history := f.history(g, "db-1")
		g.Expect(history).To(HaveLen(2))
		g.Expect(history[0]).NotTo(Equal(history[1]), "two pods, two UIDs")
		g.Expect(f.status(g, "db-1").Time).To(BeTemporally(">", deleted))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	deleted = time.Now()
	g.Expect(c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db-1"}})).To(Succeed())
	g.Eventually(func() error { return c.Get(ctx, key, &corev1.Pod{}) }).WithTimeout(10 * time.Second).Should(Satisfy(apierrors.IsNotFound))
	g.Expect(time.Since(deleted)).To(BeNumerically("<", 5*time.Second), "the pod goes once its instance manager has stopped")
	g.Expect(f.history(g, "db-1")).To(ContainElement("stop db-1"))

	// The claim's deletion deletes its volume and the folder.
	g.Expect(c.Delete(ctx, claim)).To(Succeed())
	g.Eventually(func() string { return volume }).WithTimeout(60 * time.Second).ShouldNot(BeADirectory())
}

// A pod that cannot start (here: its ServiceAccount is gone, so it gets no
// token) says why in its log and leaves nothing behind from each try: no
// network namespace, veth or folder; once the cause is gone it starts, and
// its namespace, veth and folder are then the only ones of the cluster.
func TestPostgresPodThatCannotStartLeavesNothing(t *testing.T) {
	g := NewWithT(t)
	f := startPostgresCluster(t)
	cluster, c, ctx := f.cluster, f.c, t.Context()
	lost := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lost"}}

	// Admission wants the ServiceAccount when the pod is made; the claim
	// comes after the ServiceAccount went, so that no try can have found it.
	g.Expect(c.Create(ctx, lost.DeepCopy())).To(Succeed())
	pod := pgPod("db-1", func(p *corev1.Pod) { p.Spec.ServiceAccountName = lost.Name })
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	g.Expect(c.Delete(ctx, lost.DeepCopy())).To(Succeed())
	g.Expect(c.Create(ctx, pgClaim("db-1"))).To(Succeed())

	podLog := filepath.Join(cluster.Dir(), "postgres", "default_db-1.log")
	g.Eventually(func() (string, error) {
		data, err := os.ReadFile(podLog)
		return string(data), err
	}).WithTimeout(60*time.Second).WithPolling(500*time.Millisecond).Should(
		And(ContainSubstring("cannot run yet"), ContainSubstring(`"lost"`)), "the pod's log says why it does not run")
	// The simulation tries again every round, at least every 2 s: a try
	// that left its namespace would show as one more below.
	time.Sleep(5 * time.Second)
	_, err := cluster.PostgresProcessPID("default", "db-1")
	g.Expect(err).To(HaveOccurred(), "no process runs the pod")

	g.Expect(c.Create(ctx, lost.DeepCopy())).To(Succeed())
	var pid int
	g.Eventually(func() error {
		pid, err = cluster.PostgresProcessPID("default", "db-1")
		return err
	}).WithTimeout(30*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "the pod runs once it gets a token")

	out, err := exec.Command("ip", "netns", "identify", strconv.Itoa(pid)).Output()
	g.Expect(err).NotTo(HaveOccurred())
	netns := strings.TrimSpace(string(out))
	// The cluster's namespaces and veths are named after its bridge.
	bridge, _, _ := strings.Cut(netns, "-")
	ofCluster := func(names []string) []string {
		return slices.DeleteFunc(names, func(name string) bool { return !strings.HasPrefix(name, bridge+"-") })
	}
	out, err = exec.Command("ip", "netns", "list").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ofCluster(strings.Fields(string(out)))).To(ConsistOf(netns), "the cluster's network namespaces")
	links, err := net.Interfaces()
	g.Expect(err).NotTo(HaveOccurred())
	var linkNames []string
	for _, link := range links {
		linkNames = append(linkNames, link.Name)
	}
	g.Expect(ofCluster(linkNames)).To(ConsistOf(netns), "the cluster's veths")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	folders, err := os.ReadDir(filepath.Join(cluster.Dir(), "postgres", "pods"))
	g.Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, folder := range folders {
		names = append(names, folder.Name())
	}
	g.Expect(names).To(ConsistOf(string(pod.UID)), "the pods' folders")
}

// What a crashed run left behind (a namespace with a process in it, its
// veth, a bridge and a hosts file of a slot nobody holds) goes when the
// next cluster starts its PostgreSQL simulation.
func TestPostgresStaleNetworkIsRemoved(t *testing.T) {
	g := NewWithT(t)
	requireBinaries(t)
	requireRoot(t)
	slot := -1
	var lock *os.File
	for s := 255; s >= 200 && slot < 0; s-- {
		if f, ok := tryLockSlot(s); ok {
			slot, lock = s, f
		}
	}
	g.Expect(slot).NotTo(Equal(-1), "a free slot among 200-255")
	bridge, netns := fmt.Sprintf("pgsim%d", slot), fmt.Sprintf("pgsim%d-7", slot)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", netns).Run()
		_ = exec.Command("ip", "link", "del", netns).Run()
		_ = exec.Command("ip", "link", "del", bridge).Run()
		_ = os.RemoveAll(filepath.Join("/etc/netns", netns))
	})
	for _, args := range [][]string{
		{"netns", "add", netns},
		{"link", "add", bridge, "type", "bridge"},
		{"link", "add", netns, "type", "veth", "peer", "name", "eth0", "netns", netns},
		{"link", "set", netns, "master", bridge},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "ip %v: %s", args, out)
	}
	g.Expect(os.MkdirAll(filepath.Join("/etc/netns", netns), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join("/etc/netns", netns, "hosts"), []byte("127.0.0.1 localhost\n"), 0o644)).To(Succeed())
	sleeper := exec.Command("ip", "netns", "exec", netns, "sleep", "600")
	g.Expect(sleeper.Start()).To(Succeed())
	exited := make(chan struct{})
	go func() {
		_ = sleeper.Wait()
		close(exited)
	}()
	t.Cleanup(func() { _ = sleeper.Process.Kill() })
	// The lock goes only once the process is in the namespace: a cluster
	// starting beside this test (another make test) may remove the slot as
	// soon as it is free, and a process that had yet to enter the namespace
	// would enter it after its name was gone, where nothing finds it.
	g.Eventually(func() []string {
		out, _ := exec.Command("ip", "netns", "pids", netns).Output()
		return strings.Fields(string(out))
	}).WithTimeout(10*time.Second).WithPolling(20*time.Millisecond).Should(ContainElement(strconv.Itoa(sleeper.Process.Pid)), "the process is in the stale namespace")
	g.Expect(lock.Close()).To(Succeed(), "the crashed run's lock is released")

	startPostgresCluster(t)
	g.Eventually(exited).WithTimeout(5*time.Second).Should(BeClosed(), "the process in the stale namespace is killed")
	out, err := exec.Command("ip", "netns", "list").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(string(out))).NotTo(ContainElement(netns))
	for _, link := range []string{netns, bridge} {
		_, err := net.InterfaceByName(link)
		g.Expect(err).To(HaveOccurred(), "link %s is gone", link)
	}
	g.Expect(filepath.Join("/etc/netns", netns)).NotTo(BeAnExistingFile())
}

var fakeInstance struct {
	once   sync.Once
	binary string
	err    error
}

// fakeInstanceBinary builds testdata/fakeinstance once per test binary,
// into a folder that the postgres user can read.
func fakeInstanceBinary(t *testing.T) string {
	t.Helper()
	fakeInstance.once.Do(func() {
		dir, err := os.MkdirTemp("", "localcluster-fakeinstance-")
		if err != nil {
			fakeInstance.err = err
			return
		}
		if fakeInstance.err = os.Chmod(dir, 0o755); fakeInstance.err != nil {
			return
		}
		fakeInstance.binary = filepath.Join(dir, "fakeinstance")
		out, err := exec.Command("go", "build", "-o", fakeInstance.binary, "./testdata/fakeinstance").CombinedOutput()
		if err != nil {
			fakeInstance.err = fmt.Errorf("build the fake instance manager: %w\n%s", err, out)
		}
	})
	if fakeInstance.err != nil {
		t.Fatal(fakeInstance.err)
	}
	return fakeInstance.binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeInstance.binary != "" {
		_ = os.RemoveAll(filepath.Dir(fakeInstance.binary))
	}
	os.Exit(code)
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the PostgreSQL simulation needs root, for network namespaces")
	}
}

// startPostgresCluster starts a cluster whose PostgreSQL simulation runs
// the fake instance manager, with a ServiceAccount db that may read and
// patch pods, and the headless Service db.
func startPostgresCluster(t *testing.T) *pgFixture {
	t.Helper()
	requireBinaries(t)
	requireRoot(t)
	cluster, _ := startCluster(t, localcluster.Options{Simulations: true, InstanceBinary: fakeInstanceBinary(t)})
	c, err := client.New(cluster.RESTConfig(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}},
		&rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}}},
		},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "db"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: "db"}},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", Labels: map[string]string{v1alpha1.PostgresClusterLabel: "db"}},
			Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
				Selector: map[string]string{v1alpha1.PostgresClusterLabel: "db"},
				Ports:    []corev1.ServicePort{{Name: "postgres", Port: 5432}},
			},
		},
	}
	for _, obj := range objs {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
		}
	}
	return &pgFixture{t: t, cluster: cluster, c: c}
}

// pgFixture is a cluster of the PostgreSQL tests and what they read.
type pgFixture struct {
	t       *testing.T
	cluster *localcluster.Cluster
	c       client.Client
}

func pgClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{v1alpha1.PostgresClusterLabel: "db"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// pgPod is a pod as docs/postgres-design.md describes them, running the
// fake instance manager.
func pgPod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	fieldRef := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{
			v1alpha1.PostgresClusterLabel: "db", v1alpha1.PostgresInstanceLabel: name,
		}},
		Spec: corev1.PodSpec{
			Hostname: name, Subdomain: "db", ServiceAccountName: "db",
			Containers: []corev1.Container{{
				Name: "postgres", Image: "postgres:15", Command: []string{"/controller/manager", "instance", "run"},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: fieldRef("metadata.name")},
					{Name: "POD_NAMESPACE", ValueFrom: fieldRef("metadata.namespace")},
					{Name: "POD_UID", ValueFrom: fieldRef("metadata.uid")},
					{Name: "CLUSTER_NAME", Value: "db"},
					{Name: "CLUSTER_DOMAIN", Value: "cluster.local"},
					{Name: "GREETING", Value: "hello $(POD_NAME)"},
					{Name: "PGDATA", Value: "/var/lib/postgresql/data/pgdata"},
					{Name: "PG_BIN_DIR", Value: "/usr/lib/postgresql/15/bin"},
					{Name: "PG_SOCKET_DIR", Value: "/run/postgresql"},
				},
				Ports: []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/var/lib/postgresql/data"},
					{Name: "run", MountPath: "/run/postgresql"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}},
				{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

func withEnv(name, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: name, Value: value})
	}
}

func withPeers(peers ...string) func(*corev1.Pod) {
	var addrs []string
	for _, p := range peers {
		addrs = append(addrs, pgDNSName(p)+":5432")
	}
	return withEnv("FAKE_PEERS", strings.Join(addrs, ","))
}

func withLabel(key, value string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[key] = value }
}

func withGrace(seconds int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &seconds }
}

func pgDNSName(pod string) string {
	return pod + ".db.default.svc.cluster.local"
}

func pgService(name, role string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{v1alpha1.PostgresClusterLabel: "db"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{v1alpha1.PostgresClusterLabel: "db", v1alpha1.PostgresRoleLabel: role},
			Ports:    []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromString("postgres")}},
		},
	}
}

// setRole sets the role label of a pod, or removes it.
func (f *pgFixture) setRole(g Gomega, pod, role string) {
	value := "null"
	if role != "" {
		value = strconv.Quote(role)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, v1alpha1.PostgresRoleLabel, value)
	obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod}}
	g.Expect(f.c.Patch(f.t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

// serviceAddress waits for the simulation's address on a Service.
func (f *pgFixture) serviceAddress(g Gomega, name string) string {
	var addr string
	g.Eventually(func(g Gomega) {
		svc := &corev1.Service{}
		g.Expect(f.c.Get(f.t.Context(), client.ObjectKey{Namespace: "default", Name: name}, svc)).To(Succeed())
		addr = svc.Annotations[localcluster.SimulationAddressAnnotation]
		g.Expect(addr).NotTo(BeEmpty())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return addr
}

// fakeStatus is the fake instance manager's status.json.
type fakeStatus struct {
	Time      time.Time `json:"time"`
	API       string    `json:"api"`
	Annotated bool      `json:"annotated"`
	Addrs     []string  `json:"addrs"`
	Peers     map[string]struct {
		Addrs []string `json:"addrs"`
		Name  string   `json:"name"`
		Error string   `json:"error"`
	} `json:"peers"`
	Postmaster string `json:"postmaster"`
}

// volumeDir is the host folder of the volume of a claim.
func (f *pgFixture) volumeDir(g Gomega, claim string) string {
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(f.c.Get(f.t.Context(), client.ObjectKey{Namespace: "default", Name: claim}, pvc)).To(Succeed())
	g.Expect(pvc.Spec.VolumeName).NotTo(BeEmpty())
	return filepath.Join(f.cluster.Dir(), "volumes", pvc.Spec.VolumeName)
}

// status is what the fake of pod last wrote (its claim has its name).
func (f *pgFixture) status(g Gomega, pod string) fakeStatus {
	data, err := os.ReadFile(filepath.Join(f.volumeDir(g, pod), "pgdata", "status.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var s fakeStatus
	g.Expect(json.Unmarshal(data, &s)).To(Succeed())
	return s
}

// history is the starts and stops that the fakes wrote on the claim of pod.
func (f *pgFixture) history(g Gomega, pod string) []string {
	data, err := os.ReadFile(filepath.Join(f.volumeDir(g, pod), "pgdata", "history"))
	g.Expect(err).NotTo(HaveOccurred())
	var starts []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "start ") || strings.HasPrefix(line, "stop ") {
			starts = append(starts, line)
		}
	}
	return starts
}

func (f *pgFixture) postmasterPID(g Gomega, pod string) int {
	data, err := os.ReadFile(filepath.Join(f.volumeDir(g, pod), "pgdata", "postmaster.pid"))
	g.Expect(err).NotTo(HaveOccurred())
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(first)
	g.Expect(err).NotTo(HaveOccurred())
	return pid
}

func (f *pgFixture) address(g Gomega, pod string) string {
	addr, err := f.cluster.PostgresAddress("default", pod)
	g.Expect(err).NotTo(HaveOccurred())
	return addr
}

// readGreeting connects to addr and reads the fake's first line, its pod's
// name.
func readGreeting(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return readLine(conn, 2*time.Second)
}

func readLine(conn net.Conn, timeout time.Duration) (string, error) {
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return strings.TrimSpace(line), err
}

// processGone reports whether pid has exited (a zombie has).
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && i+2 < len(data) && (data[i+2] == 'Z' || data[i+2] == 'X')
}

func procStatusField(t *testing.T, pid int, field string) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func procEnviron(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// tryLockSlot takes the lock of a slot of the PostgreSQL simulation's
// networks, as a cluster does, if nobody holds it.
func tryLockSlot(slot int) (*os.File, bool) {
	if err := os.MkdirAll("/run/pgsim", 0o755); err != nil {
		return nil, false
	}
	f, err := os.OpenFile(fmt.Sprintf("/run/pgsim/%d.lock", slot), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// tokenClaims are the claims of the token that the kubeconfig of process
// pid (its --kubeconfig) reads.
func tokenClaims(t *testing.T, pid int) (claims struct {
	Subject    string `json:"sub"`
	Kubernetes struct {
		Pod struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
	} `json:"kubernetes.io"`
}) {
	t.Helper()
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(string(cmdline), "\x00")
	var kubeconfig string
	for i, arg := range args {
		if arg == "--kubeconfig" && i+1 < len(args) {
			kubeconfig = args[i+1]
		}
	}
	config, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := config.Clusters[config.Contexts[config.CurrentContext].Cluster]
	if cluster.TLSServerName == "" || !strings.HasPrefix(cluster.Server, "https://10.201.") {
		t.Errorf("the kubeconfig names the API server %s (%q), not through the bridge", cluster.Server, cluster.TLSServerName)
	}
	token, err := os.ReadFile(config.AuthInfos[config.Contexts[config.CurrentContext].AuthInfo].TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(string(token), ".")
	if len(parts) != 3 {
		t.Fatalf("the token is no JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}
