package localcluster

// SIMULATION: the instance manager of a simulated PostgreSQL pod, as a host
// process. See simulation_postgres.go.

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/pgspec"
)

const (
	// restartBackoff is the first wait before a container restart; it
	// doubles with each restart up to maxRestartBackoff, and starts again
	// once a run lasted resetRestartsAfter, as a kubelet's CrashLoopBackOff
	// does with shorter times.
	restartBackoff     = time.Second
	maxRestartBackoff  = 30 * time.Second
	resetRestartsAfter = time.Minute
)

// errNotYet says that a pod cannot start yet (its claim is not bound), as
// a kubelet waits for its volumes to be mounted.
var errNotYet = errors.New("not yet")

// pgInstance is a simulated PostgreSQL pod: its namespace, folders and
// instance manager process.
type pgInstance struct {
	key        types.NamespacedName
	uid        types.UID
	hosts      hostsEntry
	octet      int
	netns      string
	addr       netip.Addr
	dir        string // the pod's own folder: kubeconfig, token, home, tmp, emptyDirs
	socketDir  string
	pgdata     string
	logPath    string
	kubeconfig string
	env        []string
	token      instanceToken

	proc        *Process
	startedAt   time.Time
	restarts    int
	restartAt   time.Time // when an exited process starts again; zero while it runs
	terminating bool
	killAt      time.Time
	cutOff      bool

	// oneShot is the container of a pod that runs once (a base backup's
	// or a restore drill's, simulation_postgres_jobs.go), nil for a
	// PostgreSQL pod;
	// paths maps its paths to the host, and terminationLog is where it
	// writes its termination message.
	oneShot        *corev1.Container
	paths          *containerPaths
	terminationLog string
}

// newInstance prepares a pod to run: its claims' folders, its namespace,
// its own folders, environment and credentials. What it made is removed
// again on failure.
func (s *postgresSimulation) newInstance(ctx context.Context, pod *corev1.Pod) (inst *pgInstance, err error) {
	container, oneShot := findContainer(pod, postgresContainer), false
	if container == nil {
		container, oneShot = oneShotContainer(pod), true
	}
	if container == nil {
		return nil, fmt.Errorf("it has no container named %q, nor one its label %s names", postgresContainer, pgspec.ToolLabel)
	}
	claimDirs, err := s.claimDirs(ctx, pod)
	if err != nil {
		return nil, err
	}
	octet, err := s.allocOctet()
	if err != nil {
		return nil, err
	}
	netns, addr, err := s.net.addPod(octet)
	if err != nil {
		return nil, err
	}
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	inst = &pgInstance{
		key: client.ObjectKeyFromObject(pod), uid: pod.UID, octet: octet, netns: netns, addr: addr,
		hosts:     hostsEntry{addr: addr, namespace: pod.Namespace, hostname: hostname, subdomain: pod.Spec.Subdomain},
		dir:       filepath.Join(s.dir, "pods", string(pod.UID)),
		socketDir: filepath.Join(s.net.socketDir(), fmt.Sprint(octet)),
		logPath:   s.logPath(pod),
	}
	// A failed return sets inst to nil before this runs: the cleanup keeps
	// its own reference.
	made := inst
	defer func() {
		if err != nil {
			removeNetns(netns)
			_ = os.RemoveAll(made.dir)
			_ = os.RemoveAll(made.socketDir)
		}
	}()
	for _, dir := range []string{inst.dir, filepath.Join(inst.dir, "home"), filepath.Join(inst.dir, "tmp"), inst.socketDir} {
		if err := s.owner.mkdir(dir); err != nil {
			return nil, err
		}
	}
	paths := &containerPaths{pod: pod, container: container, claimDirs: claimDirs, podDir: inst.dir, owner: s.owner}
	if inst.env, inst.pgdata, err = s.environment(ctx, pod, container, inst, paths); err != nil {
		return nil, err
	}
	if oneShot {
		inst.oneShot, inst.paths, inst.terminationLog = container, paths, filepath.Join(inst.dir, "termination-log")
	}
	inst.kubeconfig = filepath.Join(inst.dir, "kubeconfig")
	server := "https://" + s.api.addr()
	serviceAccount := pod.Spec.ServiceAccountName
	if serviceAccount == "" {
		serviceAccount = "default"
	}
	user := "system:serviceaccount:" + pod.Namespace + ":" + serviceAccount
	if err := writeInstanceKubeconfig(inst.kubeconfig, server, s.caFile, filepath.Join(inst.dir, "token"), user, pod.Namespace, s.owner); err != nil {
		return nil, err
	}
	if err := s.renewToken(ctx, inst, pod); err != nil {
		return nil, err
	}
	appendNote(inst.logPath, "pod %s (uid %s) runs in network namespace %s at %s", pod.Name, pod.UID, netns, addr)
	return inst, nil
}

// renewToken writes a new token of the pod's ServiceAccount for its
// instance manager.
func (s *postgresSimulation) renewToken(ctx context.Context, inst *pgInstance, pod *corev1.Pod) error {
	token, t, err := requestPodToken(ctx, s.cl, pod)
	if err != nil {
		return err
	}
	if err := writeOwnedFile(filepath.Join(inst.dir, "token"), []byte(token), s.owner); err != nil {
		return err
	}
	inst.token = t
	return nil
}

// environment is the environment of the instance manager: the container's
// own (plain values, $(VAR) references, values from fields, Secrets and
// ConfigMaps), with what differs on the host overridden: PGDATA (the
// container's, on the host), PG_BIN_DIR, PG_SOCKET_DIR and POD_IP. It
// returns PGDATA too.
func (s *postgresSimulation) environment(ctx context.Context, pod *corev1.Pod, container *corev1.Container, inst *pgInstance, paths *containerPaths) ([]string, string, error) {
	env := newEnvList()
	env.set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	env.set("HOME", filepath.Join(inst.dir, "home"))
	env.set("TMPDIR", filepath.Join(inst.dir, "tmp"))
	env.set("LANG", "C.UTF-8")
	own := newEnvList() // what $(VAR) may refer to: the container's variables defined before
	for _, e := range container.Env {
		value, ok, err := s.envValue(ctx, pod, inst, e, own)
		if err != nil {
			return nil, "", fmt.Errorf("environment variable %s: %w", e.Name, err)
		}
		if !ok {
			continue
		}
		own.set(e.Name, value)
		env.set(e.Name, value)
	}
	pgdata, err := paths.onHost(env.get(pgspec.EnvPGData))
	if err != nil {
		return nil, "", fmt.Errorf("PGDATA: %w", err)
	}
	env.set(pgspec.EnvPGData, pgdata)
	env.set(pgspec.EnvPGBinDir, hostPostgresBinDir)
	env.set(pgspec.EnvSocketDir, inst.socketDir)
	env.set("POD_IP", inst.addr.String())
	return env.list(), pgdata, nil
}

// envValue is the value of one variable of the container; ok is false for
// an optional reference to what does not exist.
func (s *postgresSimulation) envValue(ctx context.Context, pod *corev1.Pod, inst *pgInstance, e corev1.EnvVar, earlier *envList) (string, bool, error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return expandEnvRefs(e.Value, earlier), true, nil
	case from.FieldRef != nil:
		v, err := s.fieldValue(pod, inst, from.FieldRef.FieldPath)
		return v, err == nil, err
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		secret := &corev1.Secret{}
		if err := s.cl.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, secret); err != nil || secret.Data[ref.Key] == nil {
			return "", false, optionalRef(ref.Optional, "Secret", ref.Name, ref.Key, err)
		}
		return string(secret.Data[ref.Key]), true, nil
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm := &corev1.ConfigMap{}
		if err := s.cl.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}, cm); err != nil {
			return "", false, optionalRef(ref.Optional, "ConfigMap", ref.Name, ref.Key, err)
		}
		v, ok := cm.Data[ref.Key]
		if !ok {
			return "", false, optionalRef(ref.Optional, "ConfigMap", ref.Name, ref.Key, nil)
		}
		return v, true, nil
	}
	return "", false, errors.New("this kind of valueFrom is not simulated")
}

func optionalRef(optional *bool, kind, name, key string, err error) error {
	if optional != nil && *optional {
		return nil
	}
	if err == nil {
		err = errors.New("no such key")
	}
	return fmt.Errorf("%s %s, key %s: %w", kind, name, key, err)
}

// fieldValue is what the downward API gives for path; the pod's address is
// its namespace's, the host's is the bridge's.
func (s *postgresSimulation) fieldValue(pod *corev1.Pod, inst *pgInstance, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return inst.addr.String(), nil
	case "status.hostIP", "status.hostIPs":
		return s.net.host.String(), nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels['": pod.Labels, "metadata.annotations['": pod.Annotations} {
		if key, ok := strings.CutPrefix(path, prefix); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %s is not simulated", path)
}

// expandEnvRefs replaces $(NAME) by the value of an earlier variable, and
// $$ by $, as a kubelet does; a reference to no variable stays as it is.
func expandEnvRefs(s string, vars *envList) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) {
			if s[i+1] == '$' {
				b.WriteByte('$')
				i++
				continue
			}
			if end := strings.IndexByte(s[i+1:], ')'); s[i+1] == '(' && end > 0 {
				name := s[i+2 : i+1+end]
				if v, ok := vars.lookup(name); ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+2+end])
				}
				i += 1 + end
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ensureRunning starts the instance manager, or restarts it after a
// backoff once it exited by itself. Whatever else ran in the namespace
// goes with it, as the processes of a container go with its PID 1.
func (inst *pgInstance) ensureRunning(s *postgresSimulation) {
	now := time.Now()
	if inst.proc != nil && inst.restartAt.IsZero() {
		exited, err := inst.proc.Exited()
		if !exited {
			return
		}
		killNetnsProcesses(inst.netns)
		ran := now.Sub(inst.startedAt)
		if ran > resetRestartsAfter {
			inst.restarts = 0
		}
		backoff := min(restartBackoff<<inst.restarts, maxRestartBackoff)
		inst.restarts++
		inst.restartAt = now.Add(backoff)
		inst.note("the instance manager exited (%s) after %s; restart %d in %s", exitDescription(err), ran.Round(time.Millisecond), inst.restarts, backoff)
	}
	if now.Before(inst.restartAt) {
		return
	}
	args := append([]string{"netns", "exec", inst.netns, "setpriv"}, s.owner.setprivArgs()...)
	args = append(args, s.binary, "instance", "run", "--kubeconfig", inst.kubeconfig)
	proc := NewProcess("instance manager of "+inst.key.String(), s.ip, inst.logPath, args...)
	proc.Env = inst.env
	proc.Dir = filepath.Join(inst.dir, "home")
	inst.note("starting %s instance run --kubeconfig %s", s.binary, inst.kubeconfig)
	if err := proc.Start(); err != nil {
		inst.note("%v", err)
		inst.restartAt = now.Add(maxRestartBackoff)
		return
	}
	inst.proc, inst.startedAt, inst.restartAt = proc, now, time.Time{}
}

func (inst *pgInstance) running() bool {
	return inst.proc != nil && inst.proc.PID() != 0
}

// signal sends sig to the instance manager's process group.
func (inst *pgInstance) signal(sig syscall.Signal) {
	if !inst.running() {
		return
	}
	if pid := inst.proc.PID(); pid != 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// note appends a line of the simulation to the pod's log.
func (inst *pgInstance) note(format string, args ...any) {
	appendNote(inst.logPath, format, args...)
}

func appendNote(path, format string, args ...any) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "simulation %s: %s\n", time.Now().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

func exitDescription(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// envList is an ordered environment.
type envList struct {
	names  []string
	values map[string]string
}

func newEnvList() *envList { return &envList{values: map[string]string{}} }

func (l *envList) set(name, value string) {
	if _, ok := l.values[name]; !ok {
		l.names = append(l.names, name)
	}
	l.values[name] = value
}

func (l *envList) get(name string) string { return l.values[name] }

func (l *envList) lookup(name string) (string, bool) {
	if l == nil {
		return "", false
	}
	v, ok := l.values[name]
	return v, ok
}

func (l *envList) list() []string {
	out := make([]string, 0, len(l.names))
	for _, name := range l.names {
		out = append(out, name+"="+l.values[name])
	}
	return out
}
