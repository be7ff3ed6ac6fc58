// Package faults is the pure part of the fault-injection run of the
// end-to-end tests (issue 49): the kinds of fault, the seeded schedule
// that picks them, and the summary of a run. It needs no cluster, so that
// its tests run with the unit tests; test/e2e injects what it schedules.
package faults

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind is a kind of fault the nemesis injects.
type Kind string

// The kinds. Each names what it does to a 3-instance cluster with one
// synchronous standby; Target says which instance it picks.
const (
	// DeletePrimary deletes the primary's pod, with a grace period of 0
	// (gone at once, as with a lost node) or 1 s.
	DeletePrimary Kind = "delete-primary"
	// DeleteStandby deletes one standby's pod.
	DeleteStandby Kind = "delete-standby"
	// DeletePrimaryAndStandby deletes the primary's pod and one standby's
	// together.
	DeletePrimaryAndStandby Kind = "delete-primary-and-standby"
	// DeletePrimaryAndSyncStandby cuts one standby off the network, waits
	// for commits that the other standby alone acknowledged, deletes the
	// primary and that other standby together, and reconnects the first
	// once their processes are gone: the one instance left lacks
	// acknowledged commits, and must not be promoted (issue 49, point 1).
	DeletePrimaryAndSyncStandby Kind = "delete-primary-and-sync-standby"
	// KillPostgres kills PostgreSQL (SIGKILL) inside any instance; its
	// instance manager keeps running and starts it again.
	KillPostgres Kind = "kill-postgres"
	// KillManager kills the instance manager (SIGKILL) of any instance;
	// the simulated kubelet restarts the container.
	KillManager Kind = "kill-manager"
	// PausePostgres stops PostgreSQL's processes of any instance (SIGSTOP)
	// for a few seconds, then continues them (SIGCONT).
	PausePostgres Kind = "pause-postgres"
	// PauseManager stops the instance manager's process alone of any
	// instance for a few seconds, then continues it.
	PauseManager Kind = "pause-manager"
	// CutNetwork cuts any instance off the network for some seconds, then
	// reconnects it.
	CutNetwork Kind = "cut-network"
	// CutAPIServer cuts any instance off the API server alone for some
	// seconds: it still reaches the other instances.
	CutAPIServer Kind = "cut-apiserver"
	// RestartOperator deletes the primary's pod and kills the operator
	// once the failover has begun, then starts it again.
	RestartOperator Kind = "restart-operator-mid-failover"
	// StopAPIServer stops kube-apiserver for some seconds.
	StopAPIServer Kind = "stop-apiserver"
	// StopAPIServerMidFailover deletes the primary's pod and stops
	// kube-apiserver once the failover has begun.
	StopAPIServerMidFailover Kind = "stop-apiserver-mid-failover"
)

// Target is the instance a fault picks, by its role when the fault is
// injected: roles change as faults go on, so a schedule names roles, not
// pods.
type Target string

const (
	// NoInstance: the fault is to the control plane or the operator.
	NoInstance Target = ""
	Primary    Target = "primary"
	Standby    Target = "standby"
	// Any is the primary or a standby, drawn by the schedule.
	Any Target = "any"
)

// spec is what the schedule needs of a kind.
type spec struct {
	target Target
	// grace: the fault deletes pods, with a grace period of 0 or 1 s.
	grace bool
	// minHold and maxHold bound how long the fault lasts before it is
	// healed; zero for a fault that is not healed (a kill, a deletion).
	minHold, maxHold time.Duration
}

// Every fault that holds does so for less than the primary's lease (10 s)
// unless it is the point: a pause or a cut of a primary beyond the lease
// is what makes the others elect a new one.
var specs = map[Kind]spec{
	DeletePrimary:               {target: Primary, grace: true},
	DeleteStandby:               {target: Standby, grace: true},
	DeletePrimaryAndStandby:     {target: Standby, grace: true},
	DeletePrimaryAndSyncStandby: {target: Standby, grace: true},
	KillPostgres:                {target: Any},
	KillManager:                 {target: Any},
	PausePostgres:               {target: Any, minHold: 2 * time.Second, maxHold: 8 * time.Second},
	PauseManager:                {target: Any, minHold: 2 * time.Second, maxHold: 8 * time.Second},
	CutNetwork:                  {target: Any, minHold: 5 * time.Second, maxHold: 15 * time.Second},
	CutAPIServer:                {target: Any, minHold: 5 * time.Second, maxHold: 15 * time.Second},
	RestartOperator:             {grace: true},
	StopAPIServer:               {minHold: 10 * time.Second, maxHold: 20 * time.Second},
	StopAPIServerMidFailover:    {grace: true, minHold: 10 * time.Second, maxHold: 20 * time.Second},
}

// AllKinds are every kind, in the order of the constants.
var AllKinds = []Kind{
	DeletePrimary, DeleteStandby, DeletePrimaryAndStandby, DeletePrimaryAndSyncStandby,
	KillPostgres, KillManager, PausePostgres, PauseManager, CutNetwork, CutAPIServer,
	RestartOperator, StopAPIServer, StopAPIServerMidFailover,
}

// DefaultKinds are the kinds of a run that names none, the short run of
// make test among them: every kind.
var DefaultKinds = AllKinds

// ParseKinds reads a comma-separated list of kinds; "default" and "all"
// stand for DefaultKinds and AllKinds. A kind named twice counts once.
func ParseKinds(s string) ([]Kind, error) {
	var out []Kind
	add := func(k Kind) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	for _, name := range strings.Split(s, ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case "default":
			for _, k := range DefaultKinds {
				add(k)
			}
		case "all":
			for _, k := range AllKinds {
				add(k)
			}
		default:
			if _, ok := specs[Kind(name)]; !ok {
				return nil, fmt.Errorf("unknown fault kind %q (known: %s)", name, joinKinds(AllKinds))
			}
			add(Kind(name))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no fault kind in %q", s)
	}
	return out, nil
}

func joinKinds(kinds []Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
