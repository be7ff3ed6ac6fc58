package localcluster

// SIMULATION: the PostgreSQL Jobs of BackupJobs, run. See
// simulation_postgres.go.
//
// kwok ends a Job's pod Succeeded without running anything; a base backup
// that copied nothing, or a restore drill that queried nothing, would pass.
// A pod labelled with a PostgreSQL tool (pgspec.ToolLabel: a BackupJob's
// base backup of a PostgresCluster, a restore drill's query) is kept
// Running by a kwok stage instead (simulation_stages.go) and its tool's
// container, which the label names, run here once,
// as its kubelet would: its command, whose first word (the operator's
// binary, which the pod's init container copies from the operator's
// image) is Options.InstanceBinary, as the postgres user, in a network
// namespace of its own whose hosts file names the PostgreSQL pods, with
// the folders of its claims in place of their mount paths, its environment
// as a PostgreSQL pod's (Secrets' keys resolved). When it exits the pod
// ends Succeeded or Failed with the container's exit code and termination
// message: the file it wrote, else the end of its log
// (FallbackToLogsOnError); its namespace goes. A pod is run once: a Job
// that retries makes a new pod.

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/platform-operator/internal/pgspec"
)

// oneShotContainer is the container of pod that the simulation runs once,
// the one its tool label names, or nil: the label, not a list of the
// tools, tells, so that a new tool needs nothing here.
func oneShotContainer(pod *corev1.Pod) *corev1.Container {
	tool := pod.Labels[pgspec.ToolLabel]
	if tool == "" {
		return nil
	}
	return findContainer(pod, tool)
}

const (
	// terminationMessageLimit is what a kubelet keeps of a termination
	// message.
	terminationMessageLimit = 4096
)

// jobPods adds to live the scheduled pods of base backups and restore
// drills, which the simulation runs.
func (s *postgresSimulation) jobPods(ctx context.Context, live map[types.UID]*corev1.Pod) {
	pods := &corev1.PodList{}
	if err := s.cl.List(ctx, pods, client.HasLabels{pgspec.ToolLabel}); err != nil {
		return
	}
	for i := range pods.Items {
		if pod := &pods.Items[i]; pod.Spec.NodeName != "" && oneShotContainer(pod) != nil {
			live[pod.UID] = pod
		}
	}
}

// runOnce starts the container of a one-shot pod, or, once it exited,
// ends the pod with its result and removes what the simulation made for
// it.
func (s *postgresSimulation) runOnce(ctx context.Context, inst *pgInstance, pod *corev1.Pod) {
	if inst.proc == nil {
		s.startOnce(inst)
		return
	}
	exited, exitErr := inst.proc.Exited()
	if !exited || pod == nil {
		return
	}
	code := int32(0)
	var exit *exec.ExitError
	switch {
	case errors.As(exitErr, &exit):
		code = int32(exit.ExitCode())
	case exitErr != nil:
		code = 128
	}
	message := readLimited(inst.terminationLog, terminationMessageLimit)
	if message == "" && code != 0 {
		message = lastLines(tail(inst.logPath, logTailLines), terminationMessageLimit)
	}
	now := metav1.NewTime(time.Now())
	base := pod.DeepCopy()
	pod.Status.Phase = corev1.PodSucceeded
	reason := "Completed"
	if code != 0 {
		pod.Status.Phase, reason = corev1.PodFailed, "Error"
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: inst.oneShot.Name, Image: inst.oneShot.Image, ImageID: inst.oneShot.Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, Message: message,
			StartedAt: metav1.NewTime(inst.startedAt), FinishedAt: now,
		}},
	}}
	if err := s.cl.Status().Patch(ctx, pod, client.MergeFrom(base)); err != nil {
		return // the next round tries again
	}
	inst.note("the container %s exited with code %d; the pod is %s", inst.oneShot.Name, code, pod.Status.Phase)
	s.remove(inst, "its container has exited")
}

// startOnce starts the container's command once.
func (s *postgresSimulation) startOnce(inst *pgInstance) {
	command := append(append([]string(nil), inst.oneShot.Command...), inst.oneShot.Args...)
	if len(command) == 0 {
		inst.note("the container %s has no command", inst.oneShot.Name)
		return
	}
	args := append([]string{"netns", "exec", inst.netns, "setpriv"}, s.owner.setprivArgs()...)
	args = append(args, s.binary)
	for _, arg := range command[1:] {
		args = append(args, inst.hostArg(arg))
	}
	args = append(args, "--termination-log", inst.terminationLog)
	proc := NewProcess(inst.oneShot.Name+" of "+inst.key.String(), s.ip, inst.logPath, args...)
	proc.Env = inst.env
	proc.Dir = filepath.Join(inst.dir, "home")
	inst.note("running %s %s", s.binary, strings.Join(args[len(args)-len(command)-1:], " "))
	if err := proc.Start(); err != nil {
		inst.note("%v", err)
		return
	}
	inst.proc, inst.startedAt = proc, time.Now()
}

// hostArg is arg with a path in one of the container's volumes replaced
// by where it is on the host.
func (inst *pgInstance) hostArg(arg string) string {
	if !filepath.IsAbs(arg) || inst.paths == nil {
		return arg
	}
	for _, m := range inst.oneShot.VolumeMounts {
		mp := filepath.Clean(m.MountPath)
		if arg == mp || strings.HasPrefix(arg, mp+"/") {
			if onHost, err := inst.paths.onHost(arg); err == nil {
				return onHost
			}
		}
	}
	return arg
}

// readLimited is at most limit bytes of the file at path, "" when there is
// none.
func readLimited(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.LimitReader(f, limit))
	return string(data)
}

// lastLines is the end of text, at most limit bytes, from a line's start.
func lastLines(text string, limit int) string {
	text = strings.TrimSpace(text)
	if len(text) <= limit {
		return text
	}
	text = text[len(text)-limit:]
	if i := strings.IndexByte(text, '\n'); i >= 0 {
		text = text[i+1:]
	}
	return text
}
