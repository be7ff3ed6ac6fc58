package reliability

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"example.com/platform-operator/internal/devenv"
)

// operatorProcess runs the operator binary with leader election, on probe
// and metrics ports of its own, and, when restart is set, starts it again
// at once whenever it exits, with the same flags and ports, as the kubelet
// restarts a pod's container. It is stopped when the test ends.
type operatorProcess struct {
	t          *testing.T
	name       string
	kubeconfig string
	logPath    string
	args       []string
	probesURL  string
	restart    bool

	mu       sync.Mutex
	op       *devenv.Operator
	started  time.Time
	runs     int
	exits    []processExit
	stopping bool
}

type processExit struct {
	at  time.Time
	err error
}

// startOperatorProcess starts the operator as the user of kubeconfig. Its
// log is NAME.log in the cluster's folder.
func startOperatorProcess(t *testing.T, env *devenv.Environment, name, kubeconfig string, restart bool, extraArgs ...string) *operatorProcess {
	t.Helper()
	ports, err := devenv.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	args := append(append(append([]string{}, operatorArgs...), extraArgs...),
		"--leader-elect", "--leader-election-namespace="+devenv.OperatorNamespace,
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1]))
	p := &operatorProcess{
		t:          t,
		name:       name,
		kubeconfig: kubeconfig,
		logPath:    filepath.Join(env.Cluster.Dir(), name+".log"),
		args:       args,
		probesURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		restart:    restart,
	}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the end of %s:\n%s", p.logPath, devenv.TailFile(p.logPath, 30))
		}
		p.stop()
	})
	if restart {
		go p.supervise()
	}
	return p
}

func (p *operatorProcess) start() error {
	op, err := devenv.StartOperator(operatorBinary, p.kubeconfig, p.logPath, p.args...)
	if err != nil {
		return fmt.Errorf("start operator %s: %w", p.name, err)
	}
	op.ProbesURL = p.probesURL
	p.mu.Lock()
	p.op, p.started = op, time.Now()
	p.runs++
	p.mu.Unlock()
	return nil
}

func (p *operatorProcess) supervise() {
	for {
		op := p.current()
		<-op.Done()
		_, err := op.Exited()
		p.mu.Lock()
		if p.stopping {
			p.mu.Unlock()
			return
		}
		p.exits = append(p.exits, processExit{at: time.Now(), err: err})
		p.mu.Unlock()
		if err := p.start(); err != nil {
			p.t.Errorf("restart operator %s: %v", p.name, err)
			return
		}
	}
}

func (p *operatorProcess) stop() {
	p.mu.Lock()
	p.stopping = true
	op := p.op
	p.mu.Unlock()
	_ = op.Stop(20 * time.Second)
}

// current is the process that runs now (or last ran).
func (p *operatorProcess) current() *devenv.Operator {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.op
}

// run tells which run of the process is the current one, and since when it
// runs.
func (p *operatorProcess) run() (int, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runs, p.started
}

func (p *operatorProcess) exitsSoFar() []processExit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]processExit(nil), p.exits...)
}

// probeSample is one look at a process's /healthz and /readyz.
type probeSample struct {
	at       time.Time
	process  string
	healthz  int
	readyz   int
	body     string
	starting bool
}

// sampleProbes asks every process for /healthz and /readyz every period
// until the returned function is called, which returns the samples. A
// sample is marked starting when the process had run for less than a second
// or ended while it was taken: a restarted process needs a moment to listen.
func sampleProbes(t *testing.T, period time.Duration, procs ...*operatorProcess) func() []probeSample {
	var (
		mu      sync.Mutex
		samples []probeSample
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(period)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
			for _, p := range procs {
				runBefore, started := p.run()
				s := probeSample{at: time.Now(), process: p.name}
				s.healthz, _ = devenv.HTTPGet(t.Context(), p.probesURL+"/healthz", "")
				s.readyz, s.body = devenv.HTTPGet(t.Context(), p.probesURL+"/readyz", "")
				runAfter, _ := p.run()
				exited, _ := p.current().Exited()
				s.starting = runBefore != runAfter || exited || s.at.Sub(started) < time.Second
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
		}
	}()
	return func() []probeSample {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return samples
	}
}

// serviceAccountKubeconfig writes a kubeconfig with a token of the
// operator's ServiceAccount of deploy/, as NAME.kubeconfig in the cluster's
// folder.
func serviceAccountKubeconfig(t *testing.T, env *devenv.Environment, name string) string {
	t.Helper()
	path := filepath.Join(env.Cluster.Dir(), name+".kubeconfig")
	if err := devenv.ServiceAccountKubeconfig(t.Context(), env.Cluster, devenv.OperatorNamespace, devenv.OperatorServiceAccount, path); err != nil {
		t.Fatal(err)
	}
	return path
}
