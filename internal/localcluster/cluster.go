// Package localcluster runs a real Kubernetes control plane on loopback, for
// tests, benchmarks and `make run`: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler built from the Go module proxy
// (hack/kube-binaries.sh), with kwok simulating nodes and the pods on them.
//
// Every component is a child process in its own process group, with all its
// state in one folder. Stop ends them all; if the parent dies first, the
// kernel kills them (Pdeathsig), so nothing is left behind.
package localcluster

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// BinDirEnv names the environment variable that points to the folder of
// binaries built by hack/kube-binaries.sh.
const BinDirEnv = "KUBE_BIN_DIR"

// minFreeDiskMiB is the free space the state folder needs: etcd's database
// and the components' logs.
const minFreeDiskMiB = 512

//go:embed stages/*.yaml
var ownStages embed.FS

// Options configure a local cluster. The zero value is a cluster of one node
// in a new temporary folder, with binaries from $KUBE_BIN_DIR.
type Options struct {
	// BinDir holds the binaries and kwok-stages/ (default: $KUBE_BIN_DIR).
	BinDir string
	// Dir holds all state and logs. Default: a new temporary folder that
	// Stop removes. A folder given here is kept.
	Dir string
	// Nodes is the number of kwok nodes (default 1).
	Nodes int
	// NodeCPU, NodeMemory and NodePods are the capacity of each node
	// (defaults 32, 256Gi and 1000).
	NodeCPU, NodeMemory string
	NodePods            int
	// APIServerPort is the API server's port on 127.0.0.1 (default: a free
	// port).
	APIServerPort int
	// StartTimeout bounds Start (default 2 minutes).
	StartTimeout time.Duration
	// Logf receives progress messages; nil discards them.
	Logf func(format string, args ...any)
	// Simulations runs, in this process, the simulation parts that stand in
	// for a real cluster's storage (see simulation.go): a provisioner for
	// the StorageClass "local", the VolumeSnapshot CRDs with a snapshot
	// simulator, and a kwok stage that fails Job pods on request.
	Simulations bool
	// InstanceBinary is the operator binary whose subcommand "instance run"
	// (the PostgreSQL instance manager) the simulation runs for each
	// PostgresCluster pod (see simulation_postgres.go). Without it, or
	// without Simulations, that simulation part is off.
	InstanceBinary string
	// ObjectStoreBinDir holds SeaweedFS's weed ($SEAWEEDFS_BIN_DIR in
	// make test). With it, and with the PostgreSQL simulation running, the
	// cluster runs an S3 object store on the PostgreSQL network (see
	// simulation_objectstore.go and ObjectStore); without it, none.
	ObjectStoreBinDir string
}

// Component names, for StopComponent and StartComponent.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler"
	Kwok              = "kwok"
)

// Cluster is a running local cluster.
type Cluster struct {
	opts       Options
	dir        string
	removeDir  bool
	creds      credentials
	server     string
	kubeconfig string
	restConfig *rest.Config

	mu    sync.Mutex
	procs []*Process // in start order
	sims  *simulations
	// objectStore is how to reach the object store, nil when none runs.
	objectStore *ObjectStore
	// postgresOff says why the PostgreSQL simulation does not run, if it
	// does not.
	postgresOff string
}

// Start runs a cluster and returns once it can run pods: the API server is
// ready, the nodes are Ready and the default ServiceAccount exists. On error
// it stops whatever it started.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	opts = withDefaults(opts)
	if opts.StartTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.StartTimeout)
		defer cancel()
	}
	for attempt := 1; ; attempt++ {
		c := &Cluster{opts: opts}
		err := c.start(ctx)
		if err == nil {
			return c, nil
		}
		err = errors.Join(err, c.Stop())
		// The free ports are chosen before the components bind them: another
		// process of the machine may take one in between. A cluster in a
		// folder of its own starts again on other ports; one in a given
		// folder would find the first attempt's state there.
		if attempt >= maxStartAttempts || !portTaken(err) || opts.Dir != "" || opts.APIServerPort != 0 || ctx.Err() != nil {
			return nil, err
		}
		opts.Logf("A port was taken before its component bound it; starting the cluster again on other ports (%v)", err)
	}
}

// maxStartAttempts bounds the starts of a cluster whose ports were taken.
const maxStartAttempts = 3

// portTaken tells whether a start failed because a component's port was
// taken, as its log says.
func portTaken(err error) bool {
	return strings.Contains(err.Error(), "address already in use")
}

func withDefaults(opts Options) Options {
	if opts.BinDir == "" {
		opts.BinDir = os.Getenv(BinDirEnv)
	}
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if opts.NodeCPU == "" {
		opts.NodeCPU = "32"
	}
	if opts.NodeMemory == "" {
		opts.NodeMemory = "256Gi"
	}
	if opts.NodePods == 0 {
		opts.NodePods = 1000
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return opts
}

func (c *Cluster) start(ctx context.Context) error {
	began := time.Now()
	if err := checkBinaries(c.opts.BinDir); err != nil {
		return err
	}
	if err := c.makeDir(); err != nil {
		return err
	}
	if c.opts.APIServerPort != 0 {
		if err := checkPortFree(c.opts.APIServerPort); err != nil {
			return err
		}
	}
	ports, err := freePorts(6)
	if err != nil {
		return err
	}
	etcdPort, etcdPeerPort, apiPort, kcmPort, schedulerPort, kwokPort := ports[0], ports[1], ports[2], ports[3], ports[4], ports[5]
	if c.opts.APIServerPort != 0 {
		apiPort = c.opts.APIServerPort
	}

	if c.creds, err = writeCredentials(c.dir); err != nil {
		return err
	}
	c.server = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, c.server, c.creds.servingCert, c.creds.adminToken, "admin"); err != nil {
		return err
	}
	if c.restConfig, err = clientcmd.BuildConfigFromFlags("", c.kubeconfig); err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// Set-up and tests create objects in bursts; the default limit of 5
	// requests a second would make them wait on themselves.
	c.restConfig.QPS, c.restConfig.Burst = 500, 1000

	etcd := c.etcd(etcdPort, etcdPeerPort)
	if err := c.run(etcd); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "etcd to be healthy", func(ctx context.Context) error {
		return httpGetOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", etcdPort))
	}); err != nil {
		return err
	}

	if err := c.run(c.apiServer(apiPort, etcdPort)); err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	if err := c.waitFor(ctx, "kube-apiserver to be ready (/readyz)", func(ctx context.Context) error {
		_, err := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}); err != nil {
		return err
	}
	c.opts.Logf("kube-apiserver ready at %s after %s", c.server, time.Since(began).Round(100*time.Millisecond))

	schedulerConfig, err := c.writeSchedulerConfig()
	if err != nil {
		return err
	}
	kwokConfigs, err := c.writeKwokStages()
	if err != nil {
		return err
	}
	if c.opts.Simulations {
		c.postgresOff = postgresUnavailable(c.opts)
		stages, err := writeSimulationStages(filepath.Join(c.dir, "kwok-stages"), c.postgresOff == "")
		if err != nil {
			return err
		}
		kwokConfigs = append(kwokConfigs, stages...)
	}
	var kwokCRDs []string
	if c.opts.Simulations && c.postgresOff == "" {
		// Port forwarding to PostgreSQL pods (simulation_postgres_portforward.go).
		cl, err := client.New(c.restConfig, client.Options{})
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		if err := installKwokCRDs(ctx, cl); err != nil {
			return fmt.Errorf("simulation: %w", err)
		}
		kwokCRDs = append(kwokCRDs, kwokPortForwardCRD)
	}
	for _, p := range []*Process{c.controllerManager(kcmPort), c.scheduler(schedulerPort, schedulerConfig), c.kwok(kwokPort, kwokConfigs, kwokCRDs)} {
		if err := c.run(p); err != nil {
			return err
		}
	}
	if err := createNodes(ctx, clientset, c.opts); err != nil {
		return err
	}
	if err := c.waitFor(ctx, fmt.Sprintf("%d kwok nodes to be Ready", c.opts.Nodes), func(ctx context.Context) error {
		return nodesReady(ctx, clientset, c.opts.Nodes)
	}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the default ServiceAccount (created by kube-controller-manager)", func(ctx context.Context) error {
		_, err := clientset.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return err
	}
	if c.opts.Simulations {
		if err := c.startSimulations(ctx); err != nil {
			return err
		}
	}
	c.opts.Logf("Cluster ready after %s; state and logs in %s", time.Since(began).Round(100*time.Millisecond), c.dir)
	return nil
}

func (c *Cluster) makeDir() error {
	if c.opts.Dir != "" {
		c.dir = c.opts.Dir
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return fmt.Errorf("create state folder: %w", err)
		}
	} else {
		dir, err := os.MkdirTemp("", "localcluster-")
		if err != nil {
			return fmt.Errorf("create state folder: %w", err)
		}
		c.dir, c.removeDir = dir, true
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(c.dir, &fs); err != nil {
		return fmt.Errorf("check free disk space in %s: %w", c.dir, err)
	}
	if free := fs.Bavail * uint64(fs.Bsize) / (1 << 20); free < minFreeDiskMiB {
		return fmt.Errorf("only %d MiB free on the disk of %s: the local cluster needs at least %d MiB", free, c.dir, minFreeDiskMiB)
	}
	return nil
}

// checkBinaries fails with one line naming what is missing and how to get
// it.
func checkBinaries(binDir string) error {
	if binDir == "" {
		return fmt.Errorf("no folder of control-plane binaries: set %s to the folder that hack/kube-binaries.sh prints (make kube-binaries builds it)", BinDirEnv)
	}
	for _, name := range []string{Etcd, APIServer, ControllerManager, Scheduler, Kwok} {
		path := filepath.Join(binDir, name)
		info, err := os.Stat(path)
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is missing or not executable in %s: run make kube-binaries (hack/kube-binaries.sh)", name, binDir)
		}
	}
	if _, err := os.Stat(filepath.Join(binDir, "kwok-stages")); err != nil {
		return fmt.Errorf("kwok-stages is missing in %s: run make kube-binaries (hack/kube-binaries.sh)", binDir)
	}
	return nil
}

// run starts p and adds it to the cluster.
func (c *Cluster) run(p *Process) error {
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p.Start()
}

// waitFor polls check until it succeeds, a component exits, or ctx ends. The
// error names what was awaited, and the last failure of check or the log of
// the component that died.
func (c *Cluster) waitFor(ctx context.Context, what string, check func(context.Context) error) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	var last error
	for {
		if err := c.Err(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(attempt)
		cancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for %s (last error: %v); logs are in %s", what, last, c.dir)
		case <-ticker.C:
		}
	}
}

// Err returns an error when a component has exited without being asked to,
// naming it and quoting the end of its log; else nil.
func (c *Cluster) Err() error {
	c.mu.Lock()
	procs := append([]*Process(nil), c.procs...)
	c.mu.Unlock()
	return firstUnexpectedExit(procs)
}

// Stop ends every component, newest first, and removes the state folder if
// Start created it. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopSimulations()
	c.mu.Lock()
	procs := append([]*Process(nil), c.procs...)
	c.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].Stop()
	}
	if c.removeDir && c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			return fmt.Errorf("remove state folder: %w", err)
		}
		c.removeDir = false
	}
	return nil
}

// StopComponent stops one component, as an outage would; StartComponent
// starts it again with the same flags and state.
func (c *Cluster) StopComponent(name string) error {
	p, err := c.component(name)
	if err != nil {
		return err
	}
	p.Stop()
	return nil
}

// StartComponent starts a component that StopComponent stopped.
func (c *Cluster) StartComponent(name string) error {
	p, err := c.component(name)
	if err != nil {
		return err
	}
	return p.Start()
}

// RestartControllers stops and starts kube-scheduler and
// kube-controller-manager. After kube-apiserver restarted, their informers
// can stay behind it for good (the scheduler binds no new pod, the
// EndpointSlice controller reports its cache out of date), where in a real
// cluster both would have lost their leader lease in the outage and been
// restarted by the kubelet. SIMULATION: what the kubelet would do.
func (c *Cluster) RestartControllers() error {
	for _, name := range []string{Scheduler, ControllerManager} {
		if err := c.StopComponent(name); err != nil {
			return fmt.Errorf("stop %s: %w", name, err)
		}
		if err := c.StartComponent(name); err != nil {
			return fmt.Errorf("start %s again: %w", name, err)
		}
	}
	return nil
}

func (c *Cluster) component(name string) (*Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		if p.name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no component %q in this cluster", name)
}

// PIDs returns the process IDs of the components that run now.
func (c *Cluster) PIDs() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range c.procs {
		if pid := p.PID(); pid != 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Kubeconfig is the path of an admin kubeconfig for the cluster.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a new admin client configuration for the cluster.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Server is the URL of the API server.
func (c *Cluster) Server() string { return c.server }

// Dir is the folder of the cluster's state and logs.
func (c *Cluster) Dir() string { return c.dir }

// BinDir is the folder of the cluster's binaries; it also serves as the
// binary assets folder of controller-runtime's envtest.
func (c *Cluster) BinDir() string { return c.opts.BinDir }

// LogPath is the path of a component's log.
func (c *Cluster) LogPath(component string) string {
	return filepath.Join(c.dir, component+".log")
}

// WriteKubeconfig writes a kubeconfig for the cluster that authenticates
// with a bearer token, such as a ServiceAccount's.
func (c *Cluster) WriteKubeconfig(path, user, token string) error {
	return writeKubeconfig(path, c.server, c.creds.servingCert, token, user)
}

// Kubectl returns a kubectl command for the cluster, with the kubectl built
// next to the control plane.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.opts.BinDir, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kubeconfig)
	return cmd
}

func (c *Cluster) etcd(port, peerPort int) *Process {
	client := fmt.Sprintf("http://127.0.0.1:%d", port)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	return newProcess(Etcd, c.opts.BinDir, c.dir,
		"--name=local",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=local="+peer,
		// The data lives as long as the cluster: durability across power
		// loss is not worth an fsync per write.
		"--unsafe-no-fsync=true",
		"--quota-backend-bytes="+strconv.Itoa(8<<30),
		"--log-level=warn",
	)
}

func (c *Cluster) apiServer(port, etcdPort int) *Process {
	return newProcess(APIServer, c.opts.BinDir, c.dir,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir="+filepath.Join(c.dir, "apiserver-certs"),
		"--tls-cert-file="+c.creds.servingCert,
		"--tls-private-key-file="+c.creds.servingKey,
		"--token-auth-file="+c.creds.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.creds.serviceAccountKey,
		"--service-account-signing-key-file="+c.creds.serviceAccountKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		// On loopback there is no routable address for the kubernetes
		// Service's endpoints.
		"--endpoint-reconciler-type=none",
		// As kubeadm and kind do: privileged pods are a matter of admission
		// (Pod Security, the operator's own admission policy), which the
		// tests exercise.
		"--allow-privileged=true",
		// /debug/pprof, for the benchmarks' CPU profiles (-cpu-profile);
		// like every path of the API server it needs a permission, which
		// only the cluster's admins have.
		"--profiling=true",
		"--v=0",
	)
}

// controllerManager runs with client limits far above the defaults (20
// requests a second), which would otherwise throttle the Deployment and
// ReplicaSet controllers and make every benchmark measure them.
func (c *Cluster) controllerManager(port int) *Process {
	return newProcess(ControllerManager, c.opts.BinDir, c.dir,
		"--kubeconfig="+c.kubeconfig,
		"--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--leader-elect=false",
		"--service-account-private-key-file="+c.creds.serviceAccountKey,
		"--root-ca-file="+c.creds.servingCert,
		"--use-service-account-credentials=false",
		// No CA key to sign certificate requests with.
		"--controllers=*,-certificatesigningrequest-signing-controller",
		"--kube-api-qps=1000",
		"--kube-api-burst=2000",
		"--concurrent-deployment-syncs=20",
		"--concurrent-replicaset-syncs=20",
		"--concurrent-gc-syncs=30",
		"--concurrent-service-endpoint-syncs=20",
		"--v=0",
	)
}

func (c *Cluster) scheduler(port int, config string) *Process {
	return newProcess(Scheduler, c.opts.BinDir, c.dir,
		"--config="+config,
		"--authentication-kubeconfig="+c.kubeconfig,
		"--authorization-kubeconfig="+c.kubeconfig,
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", port),
		"--v=0",
	)
}

// kwok runs kwok, the nodes' kubelet. Its nodes' status names its own
// server (--node-ip, --node-port), on loopback, as where their kubelet
// listens: the API server's requests for a pod's port forwarding (and
// logs) reach kwok, never an address of no host. crds are the kwok
// objects it reads from the API server (--enable-crds).
func (c *Cluster) kwok(port int, configs, crds []string) *Process {
	args := []string{
		"--kubeconfig=" + c.kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		fmt.Sprintf("--server-address=127.0.0.1:%d", port),
		"--node-ip=127.0.0.1",
		fmt.Sprintf("--node-port=%d", port),
		"--tls-cert-file=" + c.creds.servingCert,
		"--tls-private-key-file=" + c.creds.servingKey,
		"--cidr=10.244.0.0/16",
		// Renew node Leases every 10 s, as kubelets do, so that a short
		// API server outage does not make the nodes look dead.
		"--node-lease-duration-seconds=40",
	}
	for _, config := range configs {
		args = append(args, "--config="+config)
	}
	if len(crds) > 0 {
		args = append(args, "--enable-crds="+strings.Join(crds, ","))
	}
	return newProcess(Kwok, c.opts.BinDir, c.dir, args...)
}

func (c *Cluster) writeSchedulerConfig() (string, error) {
	path := filepath.Join(c.dir, "scheduler.yaml")
	config := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 1000
  burst: 2000
leaderElection:
  leaderElect: false
`, c.kubeconfig)
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return "", fmt.Errorf("write scheduler configuration: %w", err)
	}
	return path, nil
}

// writeKwokStages returns kwok's --config files: the stages kwok ships, as
// hack/kube-binaries.sh copied them, and this package's own.
func (c *Cluster) writeKwokStages() ([]string, error) {
	shipped, err := filepath.Glob(filepath.Join(c.opts.BinDir, "kwok-stages", "*.yaml"))
	if err != nil || len(shipped) == 0 {
		return nil, fmt.Errorf("no kwok stages in %s: run make kube-binaries", filepath.Join(c.opts.BinDir, "kwok-stages"))
	}
	own, err := ownStages.ReadDir("stages")
	if err != nil {
		return nil, fmt.Errorf("read own kwok stages: %w", err)
	}
	dir := filepath.Join(c.dir, "kwok-stages")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write kwok stages: %w", err)
	}
	configs := shipped
	for _, entry := range own {
		data, err := ownStages.ReadFile("stages/" + entry.Name())
		if err != nil {
			return nil, fmt.Errorf("read own kwok stage %s: %w", entry.Name(), err)
		}
		path := filepath.Join(dir, entry.Name())
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, fmt.Errorf("write kwok stage: %w", err)
		}
		configs = append(configs, path)
	}
	return configs, nil
}
