package scale

import (
	"example.com/platform-operator/test/bench/benchkit"
)

// Benchmark names these results in results.json.
const Benchmark = "scale"

// Results is what results.json holds.
type Results struct {
	benchkit.RunHeader
	Scenarios []string `json:"scenarios"`
	Ns        []int    `json:"ns"`
	// Window is how long each schedule window lasts (scheduled minutes ×
	// 1 minute), Idle the Tenants' idle window; Rounds how many times the
	// Tenants' onboarding and its scripted reference run at each N.
	Window      string       `json:"window"`
	Idle        string       `json:"idleWindow"`
	Rounds      int          `json:"rounds"`
	LoadWorkers int          `json:"loadWorkers"`
	Runs        []*RunResult `json:"runs"`

	Checks []benchkit.Check `json:"checks"`
	Notes  []string         `json:"notes"`
}

// RunResult is every figure of one N.
type RunResult struct {
	N int `json:"n"`
	// Schedule is the BackupJob schedule side by side with CronJobs, one
	// per target (snapshot, volume).
	Schedule []*Schedule `json:"schedule,omitempty"`
	Tenants  *Tenants    `json:"tenants,omitempty"`
	Restart  *Restart    `json:"platformRestart,omitempty"`
	// ClusterHealth reports NodeNotReady events, Errors what failed.
	ClusterHealth []string `json:"clusterHealth,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

// Schedule is one schedule window: N BackupJobs of one target and N
// CronJobs, every one on * * * * *, in the same cluster.
type Schedule struct {
	Target string `json:"target"`
	Nodes  int    `json:"nodes"`
	// ClusterStartSeconds is the cluster's start, deploy/ included;
	// SetupSeconds from the first create to every BackupJob scheduled.
	ClusterStartSeconds float64 `json:"clusterStartSeconds"`
	SetupSeconds        float64 `json:"setupSeconds"`
	// Minutes are the scheduled times of the window (RFC 3339).
	Minutes []string `json:"scheduledTimes"`
	// BackupJobs and CronJobs are their runs against the schedule: a
	// backup (claim or snapshot) per BackupJob run, a Job per CronJob run.
	BackupJobs Tally `json:"backupJobs"`
	CronJobs   Tally `json:"cronJobs"`
	// MissedRunsInStatus is the sum of the BackupJobs' status.missedRuns
	// at the end: the operator's own count.
	MissedRunsInStatus int64 `json:"missedRunsInStatus"`
	// Writes are per run, by kind, over the window.
	BackupWrites WritesPerRun `json:"backupJobWritesPerRun"`
	CronWrites   WritesPerRun `json:"cronJobWritesPerRun"`
	// RawWrites are the API server's writes by every client over the
	// window, by verb and resource.
	RawWrites benchkit.RequestCounts `json:"windowWritesRaw"`
	// Retention is keepLast: 3 at the end of the window.
	Retention Retention `json:"retention"`
	// OperatorCPUSeconds is the operator's CPU over the window;
	// CPUSeconds every process's.
	OperatorCPUSeconds float64            `json:"operatorCPUSeconds"`
	CPUSeconds         map[string]float64 `json:"cpuSeconds"`
	// Operator is the operator's footprint over the whole cluster's life.
	Operator benchkit.Footprint `json:"operator"`
	Errors   []string           `json:"errors,omitempty"`
}

// WritesPerRun are the writes of one side's runs, divided by its runs.
type WritesPerRun struct {
	Runs int `json:"runs"`
	// ByKind is writes per run by what was written: "create VolumeSnapshot",
	// "status", "events", ...
	ByKind map[string]float64 `json:"byKind"`
	Total  float64            `json:"total"`
	// How says where each kind's count comes from.
	How map[string]string `json:"how"`
}

// Retention is what keepLast left at the end of a window.
type Retention struct {
	KeepLast int `json:"keepLast"`
	// Kept maps a number of backups to how many BackupJobs kept that many
	// (every one 3 is the target), counted once the schedules were
	// suspended and the writes stopped.
	Kept map[int]int `json:"keptByCount"`
	// Deleted are the retention's deletions in the window, and
	// PerMinute by minute of the window.
	Deleted   int   `json:"deleted"`
	PerMinute []int `json:"deletedPerMinute"`
	// EarlyDeletions are backups deleted while their BackupJob had fewer
	// than keepLast newer successful backups, as the watch saw them.
	EarlyDeletions int  `json:"earlyDeletions"`
	Settled        bool `json:"settled"`
}

// Tenants is the onboarding of N Tenants by the operator and by the
// scripted reference, in rounds, and the last round's idle window, restart
// and credentials.
type Tenants struct {
	Rounds []TenantRound `json:"rounds"`
	// Ratio is the median of the rounds' operator ÷ scripted Ready times;
	// nil unless every round has both.
	Ratio *float64 `json:"medianRatio,omitempty"`
	// WritesPerTenant are the operator's writes in the last round's
	// onboarding, per Tenant, by kind.
	WritesPerTenant map[string]float64 `json:"operatorWritesPerTenant"`
	// RawWrites are the API server's writes in that window, by every
	// client.
	RawWrites benchkit.RequestCounts `json:"onboardingWritesRaw"`
	// TokensIssued counts the tokens the operator issued in onboarding
	// (its own count), TokenRequests the API server's; SecretsWithToken the
	// Tenants whose credentials Secret holds a token.
	TokensIssued     float64 `json:"tokensIssued"`
	TokenRequests    float64 `json:"tokenRequests"`
	SecretsWithToken int     `json:"secretsWithToken"`
	Idle             *Window `json:"idle,omitempty"`
	Restart          *Window `json:"restart,omitempty"`
	// SecretsChangedByRestart counts credentials Secrets whose
	// resourceVersion changed across the restart.
	SecretsChangedByRestart int                `json:"secretsChangedByRestart"`
	Operator                benchkit.Footprint `json:"operator"`
}

// TenantRound is one round: the scripted reference and the operator, each
// on a fresh cluster.
type TenantRound struct {
	Scripted Wait     `json:"scripted"`
	Operator Wait     `json:"operator"`
	Ratio    *float64 `json:"ratio,omitempty"`
	// ScriptedErrors are Tenants whose work failed after retries.
	ScriptedErrors int    `json:"scriptedErrors"`
	FirstError     string `json:"firstError,omitempty"`
	// OperatorCPUSeconds is the operator's CPU until every Tenant was
	// Ready.
	OperatorCPUSeconds float64 `json:"operatorCPUSeconds"`
}

// Wait is the time until a number of objects met a condition.
type Wait struct {
	Seconds float64 `json:"seconds"`
	Reached int     `json:"reached"`
	Target  int     `json:"target"`
	// TimedOut is set when not every object got there by the deadline.
	TimedOut bool `json:"timedOut,omitempty"`
}

func (w Wait) ok() bool { return w.Target > 0 && !w.TimedOut && w.Reached >= w.Target }

// Window is the writes of a window in which nothing should be written.
type Window struct {
	Seconds float64 `json:"seconds"`
	// Settled is false when the writes were still coming at the end of
	// the wait for them to stop.
	Settled bool `json:"settled"`
	// Writes are the writes to the kinds watched, by verb and resource;
	// Total their sum plus the operator's events.
	Writes         benchkit.RequestCounts `json:"writes"`
	OperatorEvents int                    `json:"operatorEvents"`
	Total          float64                `json:"total"`
	// TokenRequests are token requests in the window.
	TokenRequests float64 `json:"tokenRequests"`
	// Reconciled is how long after SIGTERM the new process had been
	// through every object (for a restart).
	Reconciled *Wait `json:"reconciled,omitempty"`
	// Requests are the new process's requests by method (for a restart).
	Requests map[string]float64 `json:"operatorRequestsByMethod,omitempty"`
}

// Restart is N Websites, N Tenants and N BackupJobs on one operator,
// restarted across a scheduled time.
type Restart struct {
	Nodes int `json:"nodes"`
	// Ready is from the first create until every object of the three
	// kinds was Ready.
	Ready Wait `json:"allReady"`
	// Reconciled is from SIGTERM until the new process had reconciled
	// every Website and Tenant and those controllers' queues were empty.
	// A BackupJob controller's queue need not empty: a thousand schedules
	// every minute keep it busy, so it is judged by TakenOver.
	Reconciled Wait `json:"reconciled"`
	// TakenOver is from SIGTERM until the run of every BackupJob due at
	// AcrossMinute, the first the new process owes, was seen.
	TakenOver Wait `json:"backupJobsTakenOver"`
	// StopSeconds is how long the old process took to exit, ReadyzSeconds
	// from SIGTERM to the new one's /readyz.
	StopSeconds   float64 `json:"stopSeconds"`
	ReadyzSeconds float64 `json:"readyzFromStopSeconds"`
	// Requests are the new process's requests by method over the window.
	Requests map[string]float64 `json:"operatorRequestsByMethod"`
	// Writes are the window's writes by kind: websites, tenants, backupjobs.
	Writes map[string]benchkit.RequestCounts `json:"writesByKind"`
	// OperatorEvents are the operator's events in the window.
	OperatorEvents int     `json:"operatorEvents"`
	WindowSeconds  float64 `json:"windowSeconds"`
	Settled        bool    `json:"settled"`
	// AcrossMinute is the scheduled time the operator was down across;
	// Runs the BackupJobs' runs of the minutes around it.
	AcrossMinute string `json:"acrossScheduledTime"`
	Runs         Tally  `json:"runs"`
	// Operator is the footprint of both processes.
	Operator benchkit.Footprint `json:"operator"`
}
