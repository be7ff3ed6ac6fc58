package localcluster

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Fault hooks of the PostgreSQL simulation, for the tests that inject
// faults. SIMULATION: they exist on the local cluster only.

// PausePostgres stops (SIGSTOP) every PostgreSQL process of a simulated
// pod, the server and its children (a standby's WAL receiver among them),
// and them alone: its instance manager keeps running. A paused standby
// receives and confirms no more WAL, as one whose disk or CPU stalls.
// ResumePostgres undoes it. SIMULATION.
func (c *Cluster) PausePostgres(namespace, pod string) error {
	return c.signalPostgres(namespace, pod, syscall.SIGSTOP, "paused")
}

// ResumePostgres continues (SIGCONT) the PostgreSQL processes of a pod
// that PausePostgres stopped. SIMULATION.
func (c *Cluster) ResumePostgres(namespace, pod string) error {
	return c.signalPostgres(namespace, pod, syscall.SIGCONT, "resumed")
}

// signalPostgres sends sig to the processes named postgres in a pod's
// network namespace.
func (c *Cluster) signalPostgres(namespace, pod string, sig syscall.Signal, what string) error {
	return c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		var signalled []int
		for _, pid := range netnsPIDs(inst.netns) {
			if processName(pid) != "postgres" {
				continue
			}
			if err := syscall.Kill(pid, sig); err == nil {
				signalled = append(signalled, pid)
			}
		}
		if len(signalled) == 0 {
			return fmt.Errorf("no PostgreSQL process runs in pod %s/%s", namespace, pod)
		}
		inst.note("PostgreSQL processes %v %s", signalled, what)
		return nil
	})
}

// processName is the command name of a process (its comm), "" when it is
// gone.
func processName(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
