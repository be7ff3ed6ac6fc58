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

// PauseInstanceManager stops (SIGSTOP) the instance manager's process of a
// simulated pod, and it alone: PostgreSQL, its child, keeps running,
// serving and streaming, while the manager reports, renews and fences
// nothing, as one whose process hangs. ResumeInstanceManager undoes it.
// SIMULATION.
func (c *Cluster) PauseInstanceManager(namespace, pod string) error {
	return c.signalInstanceManager(namespace, pod, syscall.SIGSTOP, "paused")
}

// ResumeInstanceManager continues (SIGCONT) the instance manager's process
// of a pod that PauseInstanceManager stopped. SIMULATION.
func (c *Cluster) ResumeInstanceManager(namespace, pod string) error {
	return c.signalInstanceManager(namespace, pod, syscall.SIGCONT, "resumed")
}

// signalInstanceManager sends sig to the instance manager's process, not
// to its group (which holds PostgreSQL too).
func (c *Cluster) signalInstanceManager(namespace, pod string, sig syscall.Signal, what string) error {
	return c.withPostgresInstance(namespace, pod, func(_ *postgresSimulation, inst *pgInstance) error {
		pid := 0
		if inst.running() {
			pid = inst.proc.PID()
		}
		if pid == 0 {
			return fmt.Errorf("the instance manager of pod %s/%s is not running", namespace, pod)
		}
		if err := syscall.Kill(pid, sig); err != nil {
			return fmt.Errorf("signal the instance manager %d of pod %s/%s: %w", pid, namespace, pod, err)
		}
		inst.note("instance manager %d %s", pid, what)
		return nil
	})
}

// CutOffPostgresFromAPIServer cuts a simulated pod off the API server
// alone: the proxy through which its processes reach the API server closes
// their connections and every new one, while the pod still reaches, and is
// reached by, the other pods and the host. It lasts until
// ReconnectPostgresToAPIServer, or until the pod is gone. SIMULATION.
func (c *Cluster) CutOffPostgresFromAPIServer(namespace, pod string) error {
	return c.setAPIServerReach(namespace, pod, false)
}

// ReconnectPostgresToAPIServer undoes CutOffPostgresFromAPIServer.
// SIMULATION.
func (c *Cluster) ReconnectPostgresToAPIServer(namespace, pod string) error {
	return c.setAPIServerReach(namespace, pod, true)
}

func (c *Cluster) setAPIServerReach(namespace, pod string, reach bool) error {
	return c.withPostgresInstance(namespace, pod, func(s *postgresSimulation, inst *pgInstance) error {
		s.api.refuseClient(inst.addr, !reach)
		inst.note("cut off from the API server: %t", !reach)
		return nil
	})
}
