package postgres

import (
	"example.com/platform-operator/test/bench/benchkit"
)

// Benchmark names these results in results.json.
const Benchmark = "postgrescluster"

// Results is what results.json holds.
type Results struct {
	benchkit.RunHeader
	// Tries is how many times each of failover, switchover and cut-off
	// was asked for.
	Tries int `json:"tries"`
	// Cluster is the PostgresCluster measured.
	Cluster ClusterSpec `json:"cluster"`
	// ClusterStartSeconds is the local cluster's start, deploy/ included.
	ClusterStartSeconds float64 `json:"clusterStartSeconds"`
	// LeaseDurationSeconds is the primary's Lease's duration, read from
	// the Lease: the cut-off target is this plus 5 s.
	LeaseDurationSeconds float64 `json:"leaseDurationSeconds"`
	// Ready is from the create call until the cluster was Ready with
	// every instance ready.
	Ready Timed `json:"createToReady"`
	// Failover deletes the primary's pod with a 1 s grace period,
	// FailoverNoGrace with none (at once) and FailoverDefaultGrace with
	// the default 30 s; CutOff cuts the primary's network namespace off;
	// Switchover sets spec.primary to a replica. Each try's time is until
	// the writer's first successful insert on the new primary, its pause
	// the client's view (Try.PauseSeconds).
	Failover             Series `json:"failoverPodDeleted"`
	FailoverNoGrace      Series `json:"failoverPodDeletedNoGrace"`
	FailoverDefaultGrace Series `json:"failoverPodDeletedDefaultGrace"`
	Switchover           Series `json:"switchover"`
	CutOff               Series `json:"failoverCutOff"`
	Writer               Writer `json:"writer"`
	// Operator is the operator's footprint over the whole run.
	Operator benchkit.Footprint `json:"operator"`
	// InstanceManagers are the instance manager processes (one per pod;
	// a pod made again is a new process), in the order first seen.
	InstanceManagers []benchkit.ProcessPeak `json:"instanceManagers"`
	// InstanceSampleEvery is how often they were sampled.
	InstanceSampleEvery string           `json:"instanceSampleInterval"`
	Checks              []benchkit.Check `json:"checks"`
	ClusterHealth       []string         `json:"clusterHealth,omitempty"`
	Errors              []string         `json:"errors,omitempty"`
	Notes               []string         `json:"notes"`
}

// ClusterSpec is the shape of the PostgresCluster measured.
type ClusterSpec struct {
	Instances   int32  `json:"instances"`
	Synchronous int32  `json:"synchronous"`
	Storage     string `json:"storage"`
	Image       string `json:"image"`
}

// Timed is one measured time, or why there is none.
type Timed struct {
	Seconds float64 `json:"seconds"`
	OK      bool    `json:"ok"`
	Error   string  `json:"error,omitempty"`
}

// Series is the tries of one operation, and their distribution over the
// tries that completed.
type Series struct {
	Tries   []Try                 `json:"tries"`
	Seconds benchkit.Distribution `json:"seconds"`
	// Pause is the distribution of the tries' PauseSeconds.
	Pause benchkit.Distribution `json:"pauseSeconds"`
}

// Try is one failover or switchover.
type Try struct {
	// From is the primary before, To the one the writer reached after.
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Seconds is from the action (the delete call, the cut, the patch) to
	// the writer's first successful insert on another primary (on the
	// target, for a switchover).
	Seconds *float64 `json:"seconds,omitempty"`
	// PauseSeconds is the client's view: the longest the writer went
	// without a commit, from its last commit before the action to its
	// first on the new primary. A graceful stop may serve writes after
	// the action, a client's reconnection costs time after the promotion:
	// this is what an application sees, where Seconds is what the
	// operator and the instances do.
	PauseSeconds *float64 `json:"pauseSeconds,omitempty"`
	// StatusSeconds is until status.currentPrimary named the new primary,
	// as this program's polling (every 100 ms) saw it.
	StatusSeconds *float64 `json:"statusSeconds,omitempty"`
	// RecoveredSeconds is until the cluster was Ready again with every
	// instance ready (the former primary rejoined): not part of the
	// measured time, which the next try waits for.
	RecoveredSeconds *float64 `json:"recoveredSeconds,omitempty"`
	// Events are the operator's events about the cluster in the try, by
	// reason (FailoverStarted, SwitchoverStarted, Promoted): seconds from
	// the action to the first of each, from its eventTime.
	Events map[string]float64 `json:"events,omitempty"`
	// TimedOut is set when no insert reached a new primary within the
	// try's limit: the operation did not complete.
	TimedOut bool `json:"timedOut,omitempty"`
	// Error is a failure of this program (an API call), which leaves the
	// try unmeasured.
	Error string `json:"error,omitempty"`
}

// Writer is what the writer committed through CLUSTER-rw over every try.
type Writer struct {
	Committed int `json:"committed"`
	// Failed are attempts that returned an error (no primary routed, a
	// connection cut); their rows are not counted as committed.
	Failed int `json:"failedAttempts"`
	// Lost counts committed rows missing at the end; nil when they could
	// not be counted.
	Lost       *int   `json:"lost,omitempty"`
	LostError  string `json:"lostError,omitempty"`
	EveryMs    int64  `json:"intervalMs"`
	TimeoutMs  int64  `json:"attemptTimeoutMs"`
	Statements string `json:"statement"`
}
