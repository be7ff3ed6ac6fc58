package localcluster

// SIMULATION: PostgreSQL pods that run. See simulation.go.
//
// kwok's pods run no containers. For each pod labelled
// example.com/postgrescluster that is scheduled and not being deleted, this
// part runs what the pod's container "postgres" would run, the instance
// manager (Options.InstanceBinary instance run), as a host process: as the
// unprivileged user postgres, in a network namespace of its own
// (simulation_postgres_network.go) whose hosts file names the other
// PostgreSQL pods (simulation_postgres_hosts.go), with a kubeconfig that
// reaches the API server through the bridge and a token of the pod's own
// ServiceAccount (simulation_postgres_apiserver.go), its data in a host
// folder per PersistentVolume (simulation_postgres_volumes.go). It plays the
// kubelet: the container's environment (simulation_postgres_process.go),
// restarts after a backoff, SIGTERM then SIGKILL after the grace period
// when the pod is deleted, then the pod's final deletion. Services labelled
// example.com/postgrescluster get a proxy on loopback, as kube-proxy would
// give them a cluster IP (simulation_postgres_services.go).
//
// It needs root (network namespaces), ip, setpriv and a user postgres;
// without them, or without Options.InstanceBinary, it stays off and says so
// once. Pod addresses that kwok reports and Service cluster IPs are never
// dialled: they belong to no host.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/api/v1alpha1"
	"example.com/platform-operator/internal/pgspec"
)

const (
	// postgresUser runs the instance managers: initdb and postgres refuse
	// root.
	postgresUser = "postgres"
	// hostPostgresBinDir holds the host's PostgreSQL 15: Debian's layout
	// is the official image's.
	hostPostgresBinDir = pgspec.BinDir
	// postgresContainer is the container whose process the simulation runs.
	postgresContainer = pgspec.ContainerName
	// postgresStopGrace bounds how long Stop waits for the instance
	// managers after SIGTERM.
	postgresStopGrace = 5 * time.Second
)

// postgresSimulation runs the instance managers of one cluster.
type postgresSimulation struct {
	// extraHosts are lines every pod's hosts file ends with: the object
	// store's name. Set before the simulation's loops start.
	extraHosts string

	cl       client.Client
	logf     func(string, ...any)
	binary   string
	ip       string
	owner    fileOwner
	net      *simNetwork
	api      *tcpProxy
	caFile   string
	dir      string // <cluster>/postgres: logs, and pods/<uid>/ of each pod
	volumes  string // <cluster>/volumes: a folder per PersistentVolume
	services *serviceProxies
	cancel   context.CancelFunc
	done     chan struct{}

	mu        sync.Mutex
	instances map[types.UID]*pgInstance
	nextOctet int
	failures  map[types.UID]string // the last preparation error of a pod, said once
	rounds    int
}

// postgresUnavailable says why the PostgreSQL simulation cannot run on this
// machine, or "".
func postgresUnavailable(opts Options) string {
	switch {
	case opts.InstanceBinary == "":
		return "no instance manager binary (Options.InstanceBinary, or the operator binary of an environment)"
	case os.Geteuid() != 0:
		return "it needs root, for network namespaces"
	}
	for _, tool := range []string{"ip", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not on PATH"
		}
	}
	if _, err := user.Lookup(postgresUser); err != nil {
		return "there is no user " + postgresUser
	}
	return ""
}

// startPostgresSimulation prepares the folders, claims a network, starts
// the API server's proxy and the loop that runs the pods' instance
// managers.
func (c *Cluster) startPostgresSimulation(cl client.Client) (*postgresSimulation, error) {
	owner, err := lookupOwner(postgresUser)
	if err != nil {
		return nil, err
	}
	ip, _ := exec.LookPath("ip")
	s := &postgresSimulation{
		cl: cl, logf: c.opts.Logf, ip: ip, owner: owner, caFile: c.creds.servingCert,
		dir: postgresSimulationDir(c.dir), volumes: filepath.Join(c.dir, "volumes"),
		services: &serviceProxies{cl: cl, byUID: map[types.UID]*serviceProxy{}},
		done:     make(chan struct{}), instances: map[types.UID]*pgInstance{}, failures: map[types.UID]string{},
		nextOctet: pgsimFirstPod,
	}
	if err := s.prepareFolders(c.dir, c.removeDir, c.opts.InstanceBinary); err != nil {
		return nil, err
	}
	if s.net, err = claimNetwork(c.opts.Logf); err != nil {
		return nil, err
	}
	server, err := url.Parse(c.server)
	if err == nil {
		err = os.MkdirAll(s.net.socketDir(), 0o755)
	}
	if err == nil {
		s.api, err = startTCPProxy(netip.AddrPortFrom(s.net.host, 0).String(), server.Host)
	}
	if err != nil {
		s.net.close()
		return nil, fmt.Errorf("simulation: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		poll(ctx, cl, func(ctx context.Context, _ client.Client) { s.round(ctx) })
	}()
	return s, nil
}

// prepareFolders makes the folders of the simulation in the cluster's
// folder, which the postgres user must be able to reach, and finds a path
// of the instance binary that it can run.
func (s *postgresSimulation) prepareFolders(clusterDir string, temporary bool, instanceBinary string) error {
	if temporary {
		// A temporary folder is made 0700; the postgres user must reach
		// the volumes and pods folders in it (its keys stay 0600).
		if err := os.Chmod(clusterDir, 0o711); err != nil {
			return fmt.Errorf("simulation: %w", err)
		}
	}
	if err := s.owner.run("test", "-x", clusterDir); err != nil {
		return fmt.Errorf("simulation: the user %s cannot reach %s: make it and the folders above it searchable by others", s.owner.name, clusterDir)
	}
	for _, dir := range []string{s.dir, filepath.Join(s.dir, "pods"), s.volumes} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("simulation: %w", err)
		}
	}
	binary, err := filepath.Abs(instanceBinary)
	if err != nil {
		return fmt.Errorf("simulation: instance binary: %w", err)
	}
	s.binary = binary
	if err := s.owner.run("test", "-x", binary); err != nil {
		// Under a private folder (such as /root): run a copy, as a pod's
		// init container copies the binary into its own volume.
		if s.binary, err = copyExecutable(binary, filepath.Join(s.dir, "bin")); err != nil {
			return err
		}
		s.logf("Simulation: the user %s cannot run %s; PostgreSQL pods run a copy, %s", s.owner.name, binary, s.binary)
	}
	return nil
}

// stop ends the instance managers (SIGTERM, then SIGKILL after
// postgresStopGrace), then removes the namespaces, proxies and bridge.
func (s *postgresSimulation) stop() {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, inst := range s.instances {
		inst.signal(syscall.SIGTERM)
	}
	grace, cancel := context.WithTimeout(context.Background(), postgresStopGrace)
	defer cancel()
	for _, inst := range s.instances {
		if inst.running() {
			select {
			case <-inst.proc.Done():
			case <-grace.Done():
			}
		}
	}
	for _, inst := range s.instances {
		s.remove(inst, "the cluster stops")
	}
	s.services.closeAll()
	s.api.close()
	s.net.close()
}

// round brings the instance managers in line with the pods: it removes
// those of pods that are gone, stops those of pods being deleted, prepares
// and starts those of new pods, restarts those that exited, and renews
// tokens; then it updates the hosts files, the Services' proxies and the
// volumes' folders.
func (s *postgresSimulation) round(ctx context.Context) {
	pods := &corev1.PodList{}
	if err := s.cl.List(ctx, pods, client.HasLabels{v1alpha1.PostgresClusterLabel}); err != nil {
		return // the API server may be stopped on purpose; nothing is known
	}
	live := map[types.UID]*corev1.Pod{}
	for i := range pods.Items {
		if pod := &pods.Items[i]; pod.Spec.NodeName != "" {
			live[pod.UID] = pod
		}
	}
	s.jobPods(ctx, live)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rounds++
	for uid, inst := range s.instances {
		if live[uid] == nil {
			s.remove(inst, "the pod is gone")
		}
	}
	for uid := range s.failures {
		if live[uid] == nil {
			delete(s.failures, uid)
		}
	}
	for _, pod := range sortedPods(live) {
		inst := s.instances[pod.UID]
		switch {
		case pod.DeletionTimestamp != nil:
			s.terminate(ctx, inst, pod)
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		case inst == nil:
			s.prepare(ctx, pod)
		}
	}
	s.writeHostsFiles()
	for _, inst := range s.instances {
		if inst.oneShot != nil && !inst.terminating {
			s.runOnce(ctx, inst, live[inst.uid])
			continue
		}
		if !inst.terminating {
			inst.ensureRunning(s)
			if time.Now().After(inst.token.renewAt) {
				_ = s.renewToken(ctx, inst, live[inst.uid])
			}
		}
	}
	s.services.sync(ctx, s.endpointAddr)
	if s.rounds%10 == 1 {
		sweepVolumeDirs(ctx, s.cl, s.volumes)
	}
}

// prepare makes a new pod's namespace, folders, environment and
// credentials, or leaves it to a later round: a claim not yet bound is
// waited for, other failures are said once in the cluster's log and the
// pod's.
func (s *postgresSimulation) prepare(ctx context.Context, pod *corev1.Pod) {
	inst, err := s.newInstance(ctx, pod)
	if errors.Is(err, errNotYet) {
		return
	}
	if err != nil {
		msg := err.Error()
		if s.failures[pod.UID] != msg {
			s.failures[pod.UID] = msg
			s.logf("Simulation: PostgreSQL pod %s/%s cannot run yet: %s", pod.Namespace, pod.Name, msg)
			appendNote(s.logPath(pod), "cannot run yet: %s", msg)
		}
		return
	}
	delete(s.failures, pod.UID)
	s.instances[pod.UID] = inst
	if inst.oneShot == nil {
		// Without it only kubectl port-forward fails: the pod runs.
		if err := s.forwardPort(ctx, pod, inst); err != nil {
			s.logf("Simulation: %v", err)
			appendNote(s.logPath(pod), "%v", err)
		}
	}
}

// terminate stops the instance manager of a pod being deleted, as a
// kubelet would: SIGTERM, SIGKILL once the pod's grace period has passed;
// once it has exited, the namespace goes and the pod is deleted for good.
func (s *postgresSimulation) terminate(ctx context.Context, inst *pgInstance, pod *corev1.Pod) {
	if inst != nil {
		if !inst.terminating {
			grace := 30 * time.Second
			if pod.DeletionGracePeriodSeconds != nil {
				grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
			}
			inst.terminating, inst.killAt = true, time.Now().Add(grace)
			inst.note("the pod is being deleted: SIGTERM, SIGKILL after %s", grace)
			inst.signal(syscall.SIGTERM)
		}
		if inst.running() {
			if time.Now().After(inst.killAt) {
				inst.note("the grace period has passed: SIGKILL")
				inst.signal(syscall.SIGKILL)
			}
			return
		}
		s.remove(inst, "the instance manager has stopped")
	}
	// The kubelet's final deletion, once the containers have stopped.
	_ = s.cl.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
}

// remove kills what is left of an instance and removes its namespace and
// folders; its log stays.
func (s *postgresSimulation) remove(inst *pgInstance, why string) {
	if inst.running() {
		inst.signal(syscall.SIGKILL)
		select {
		case <-inst.proc.Done():
		case <-time.After(2 * time.Second):
		}
	}
	removeNetns(inst.netns)
	// A cut from the API server ends with the pod, not with its address,
	// which a later pod may get.
	s.api.refuseClient(inst.addr, false)
	_ = os.RemoveAll(inst.dir)
	_ = os.RemoveAll(inst.socketDir)
	inst.note("removed: %s", why)
	delete(s.instances, inst.uid)
}

// writeHostsFiles rewrites the hosts file of every namespace whose content
// changed: every pod that is not being deleted, by its names.
func (s *postgresSimulation) writeHostsFiles() {
	var entries []hostsEntry
	for _, inst := range s.instances {
		if !inst.terminating {
			entries = append(entries, inst.hosts)
		}
	}
	for _, inst := range s.instances {
		if err := writeHostsFile(inst.netns, append(hostsFile(inst.hosts, entries), s.extraHosts...)); err != nil {
			inst.note("%v", err)
		}
	}
}

// endpointAddr is the namespace address of a pod, for the Services'
// proxies.
func (s *postgresSimulation) endpointAddr(namespace, name string, uid types.UID) (netip.Addr, bool) {
	for _, inst := range s.instances {
		if inst.key.Namespace == namespace && inst.key.Name == name && (uid == "" || uid == inst.uid) && !inst.terminating {
			return inst.addr, true
		}
	}
	return netip.Addr{}, false
}

// allocOctet returns the next free last octet of a pod address, round
// robin, so that an address is not reused while neighbours may still cache
// the MAC address of the pod that had it.
func (s *postgresSimulation) allocOctet() (int, error) {
	used := map[int]bool{}
	for _, inst := range s.instances {
		used[inst.octet] = true
	}
	for range pgsimLastPod - pgsimFirstPod + 1 {
		octet := s.nextOctet
		s.nextOctet++
		if s.nextOctet > pgsimLastPod {
			s.nextOctet = pgsimFirstPod
		}
		if !used[octet] {
			return octet, nil
		}
	}
	return 0, fmt.Errorf("all %d addresses of %s are taken", pgsimLastPod-pgsimFirstPod+1, s.net.prefix)
}

func (s *postgresSimulation) logPath(pod *corev1.Pod) string {
	return postgresPodLog(s.dir, pod.Namespace, pod.Name)
}

// PostgresLogPath is where the output of a simulated PostgreSQL pod's
// processes (its instance manager's and PostgreSQL's) goes. SIMULATION.
func (c *Cluster) PostgresLogPath(namespace, pod string) string {
	return postgresPodLog(postgresSimulationDir(c.dir), namespace, pod)
}

func postgresSimulationDir(clusterDir string) string { return filepath.Join(clusterDir, "postgres") }

func postgresPodLog(dir, namespace, pod string) string {
	return filepath.Join(dir, namespace+"_"+pod+".log")
}

func sortedPods(pods map[types.UID]*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func lookupOwner(name string) (fileOwner, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return fileOwner{}, fmt.Errorf("simulation: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fileOwner{}, fmt.Errorf("simulation: user %s: %w", name, err)
	}
	return fileOwner{name: name, uid: uid, gid: gid}, nil
}

// copyExecutable copies the program at path into dir, readable and
// executable by all.
func copyExecutable(path, dir string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("simulation: copy the instance binary: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("simulation: copy the instance binary: %w", err)
	}
	dst := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		return "", fmt.Errorf("simulation: copy the instance binary: %w", err)
	}
	return dst, nil
}

// run runs a command as o, failing on a non-zero exit.
func (o fileOwner) run(name string, args ...string) error {
	return exec.Command("setpriv", append(o.setprivArgs(), append([]string{name}, args...)...)...).Run()
}

// setprivArgs run what follows as o, with o's groups, killed if its
// parent dies (changing the user clears the parent-death signal that
// Process sets).
func (o fileOwner) setprivArgs() []string {
	return []string{"--reuid=" + strconv.Itoa(o.uid), "--regid=" + strconv.Itoa(o.gid), "--init-groups", "--pdeathsig", "SIGKILL", "--"}
}

// The test hooks. SIMULATION: they exist on the local cluster only.

// PostgresAddress is the address of a simulated PostgreSQL pod in its own
// network namespace, where its instance manager listens (POD_IP). It is
// reachable from the host and from the other simulated PostgreSQL pods of
// the cluster. SIMULATION.
func (c *Cluster) PostgresAddress(namespace, pod string) (string, error) {
	var addr string
	err := c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		addr = inst.addr.String()
		return nil
	})
	return addr, err
}

// PostgresSocketDir is the folder of a simulated PostgreSQL pod's Unix
// socket. A socket is a file, not a network address: the host reaches it
// whatever the pod's network does, cut off included, so a check that must
// see a pod's PostgreSQL as its own local clients do connects there.
// SIMULATION.
func (c *Cluster) PostgresSocketDir(namespace, pod string) (string, error) {
	var dir string
	err := c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		dir = inst.socketDir
		return nil
	})
	return dir, err
}

// CommandInPostgresPod is a command that runs in a simulated PostgreSQL
// pod's network namespace, as a sidecar container of the pod would: it
// reaches the pod's own address even while CutOffPostgres holds, and ends
// with the pod. It runs as root, with the test's environment. SIMULATION.
func (c *Cluster) CommandInPostgresPod(ctx context.Context, namespace, pod, name string, args ...string) (*exec.Cmd, error) {
	var netns string
	err := c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		netns = inst.netns
		return nil
	})
	if err != nil {
		return nil, err
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", netns, name}, args...)...), nil
}

// CutOffPostgres sets the host end of a simulated PostgreSQL pod's veth
// down: its processes then reach neither the other pods nor the API
// server, and nothing reaches them, until ReconnectPostgres. It lasts
// across restarts of its instance manager. SIMULATION.
func (c *Cluster) CutOffPostgres(namespace, pod string) error {
	return c.setPostgresLink(namespace, pod, false)
}

// ReconnectPostgres undoes CutOffPostgres. SIMULATION.
func (c *Cluster) ReconnectPostgres(namespace, pod string) error {
	return c.setPostgresLink(namespace, pod, true)
}

func (c *Cluster) setPostgresLink(namespace, pod string, up bool) error {
	return c.withPostgresInstance(namespace, pod, func(s *postgresSimulation, inst *pgInstance) error {
		if err := s.net.setLink(inst.octet, up); err != nil {
			return err
		}
		inst.cutOff = !up
		inst.note("cut off: %t", inst.cutOff)
		return nil
	})
}

// PostgresProcessPID is the process ID of a simulated PostgreSQL pod's
// instance manager, while it runs. SIMULATION.
func (c *Cluster) PostgresProcessPID(namespace, pod string) (int, error) {
	var pid int
	err := c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		if inst.running() {
			pid = inst.proc.PID()
		}
		if pid == 0 {
			return fmt.Errorf("the instance manager of pod %s/%s is not running", namespace, pod)
		}
		return nil
	})
	return pid, err
}

// KillPostgres kills, with SIGKILL, the PostgreSQL server of a simulated
// pod, and it alone: the process that the first line of postmaster.pid in
// its PGDATA names, if it runs in the pod's namespace. Its instance manager
// keeps running. SIMULATION.
func (c *Cluster) KillPostgres(namespace, pod string) error {
	return c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		data, err := os.ReadFile(filepath.Join(inst.pgdata, "postmaster.pid"))
		if err != nil {
			return fmt.Errorf("no PostgreSQL server of pod %s/%s: %w", namespace, pod, err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || pid <= 1 {
			return fmt.Errorf("postmaster.pid of pod %s/%s names no process: %q", namespace, pod, first)
		}
		for _, p := range netnsPIDs(inst.netns) {
			if p == pid {
				inst.note("PostgreSQL server %d killed", pid)
				return syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return fmt.Errorf("the PostgreSQL server %d of pod %s/%s is not running", pid, namespace, pod)
	})
}

// withPostgresInstance calls f with the instance of a pod (the one not
// being deleted, if a former pod of that name is still stopping).
func (c *Cluster) withPostgresInstance(namespace, pod string, f func(*postgresSimulation, *pgInstance) error) error {
	c.mu.Lock()
	sims, off := c.sims, c.postgresOff
	c.mu.Unlock()
	if sims == nil || sims.postgres == nil {
		if off == "" {
			off = "the simulations are off"
		}
		return fmt.Errorf("the PostgreSQL simulation is not running: %s", off)
	}
	s := sims.postgres
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *pgInstance
	for _, inst := range s.instances {
		if inst.key.Namespace == namespace && inst.key.Name == pod && (found == nil || found.terminating) {
			found = inst
		}
	}
	if found == nil {
		return fmt.Errorf("no simulated PostgreSQL pod %s/%s (yet)", namespace, pod)
	}
	return f(s, found)
}
