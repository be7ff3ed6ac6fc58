package pgbench

import (
	"path/filepath"

	"example.com/platform-operator/test/bench/benchkit"
)

// Benchmark names these results in results.json.
const Benchmark = "pgbench"

// Results is what results.json holds.
type Results struct {
	benchkit.RunHeader
	// PostgreSQL is server_version, the same binaries on both sides.
	PostgreSQL string `json:"postgresql"`
	// Pgbench is how every run was asked for.
	Pgbench PgbenchSettings `json:"pgbench"`
	// Ours is the PostgresCluster; ByHand the servers this program set up
	// itself.
	Ours   OursSetup   `json:"ours"`
	ByHand ByHandSetup `json:"byHand"`
	// ClusterStartSeconds is the local cluster's start, deploy/ included.
	ClusterStartSeconds float64 `json:"clusterStartSeconds"`
	// Init is each side's pgbench -i.
	Init []InitRun `json:"init"`
	// Runs are every pgbench run, in the order they ran.
	Runs []RunResult `json:"runs"`
	// Comparisons are the ratios, per round and their median.
	Comparisons []Comparison `json:"comparisons"`
	// Settings are the parameters whose values differ between the two
	// primaries, as SHOW ALL gives them to the application's role.
	Settings      SettingsDiff     `json:"settings"`
	Checks        []benchkit.Check `json:"checks"`
	ClusterHealth []string         `json:"clusterHealth,omitempty"`
	Errors        []string         `json:"errors,omitempty"`
	Notes         []string         `json:"notes"`
}

// PgbenchSettings are the flags of every run.
type PgbenchSettings struct {
	Scale           int      `json:"scale"`
	Clients         int      `json:"clients"`
	Threads         int      `json:"threads"`
	DurationSeconds int      `json:"durationSeconds"`
	Rounds          int      `json:"rounds"`
	Workloads       []string `json:"workloads"`
	// Synchronous are the settings measured, in order: 1 waits for one
	// standby's flush on every commit, 0 for none.
	Synchronous []int `json:"synchronous"`
}

// OursSetup is the PostgresCluster measured.
type OursSetup struct {
	Instances int32  `json:"instances"`
	Storage   string `json:"storage"`
	Image     string `json:"image"`
	// SynchronousChange is how the cluster went from synchronous: 1 to 0.
	SynchronousChange string `json:"synchronousChange"`
	// InitDBFlags are the instance manager's initdb flags.
	InitDBFlags []string `json:"initdbFlags"`
	// Parameters are its spec.parameters, none by default.
	Parameters map[string]string `json:"parameters,omitempty"`
}

// with is the setup with spec.parameters params.
func (s OursSetup) with(params map[string]string) OursSetup {
	s.Parameters = params
	return s
}

// ByHandSetup is how this program set up its primary and standbys.
type ByHandSetup struct {
	InitDBFlags []string `json:"initdbFlags"`
	// Configuration is what it added to postgresql.conf, besides each
	// server's port, and what it set with ALTER SYSTEM.
	Configuration []string `json:"configuration"`
	// Standbys is how each standby was made and started.
	Standbys string `json:"standbys"`
	// InitDBMatchesOurs compares the initdb flags.
	InitDBMatchesOurs string `json:"initdbMatchesOurs"`
}

// Systems and paths of a RunResult.
const (
	systemOurs   = "ours"
	systemByHand = "by hand"
	// pathDirect is the primary pod's namespace address; pathService the
	// -rw Service's loopback proxy; pathLoopback the hand-made primary on
	// 127.0.0.1.
	pathDirect   = "direct"
	pathService  = "service"
	pathLoopback = "loopback"
)

// InitRun is one pgbench -i.
type InitRun struct {
	System  string  `json:"system"`
	Seconds float64 `json:"seconds"`
	Error   string  `json:"error,omitempty"`
}

// RunResult is one pgbench run.
type RunResult struct {
	Round       int    `json:"round"`
	Synchronous int    `json:"synchronous"`
	Workload    string `json:"workload"`
	System      string `json:"system"`
	Path        string `json:"path"`
	// Server names what pgbench connected to: the primary's pod, the
	// Service, or the hand-made primary.
	Server string `json:"server"`
	// TPS is pgbench's "tps = ... (without initial connection time)".
	TPS float64 `json:"tps"`
	// Processed is pgbench's count of transactions, Latency what the
	// transaction logs say.
	Processed int     `json:"processed"`
	Latency   Latency `json:"latency"`
	// ReportedMeanMs is pgbench's own "latency average", a check of the
	// logs' column: pgbench derives it from the run's length, so it is a
	// little above the logs' mean (it counts the clients' time between
	// transactions too).
	ReportedMeanMs float64 `json:"reportedMeanMs"`
	Failed         int     `json:"failedTransactions"`
	// CPUSeconds are the CPU seconds that processes used during the run,
	// by name: pgbench, this program (which runs the Service's proxy),
	// the operator, the instance managers, and the whole machine.
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	Error      string             `json:"error,omitempty"`
}

// Names of RunResult.CPUSeconds.
const (
	cpuPgbench  = "pgbench"
	cpuProgram  = "this program (Service proxy included)"
	cpuOperator = "operator"
	cpuManagers = "instance managers"
	cpuMachine  = "machine"
)

// ok is a run with both figures.
func (r RunResult) ok() bool { return r.Error == "" && r.TPS > 0 && r.Latency.Transactions > 0 }

// Comparison is a ratio subject ÷ reference per round, and their median.
type Comparison struct {
	Workload    string `json:"workload"`
	Synchronous int    `json:"synchronous"`
	// Subject and Reference are "system path", such as "ours direct".
	Subject   string `json:"subject"`
	Reference string `json:"reference"`
	// TPSRatios and P99Ratios are per round, nil where a run lacks its
	// figure.
	TPSRatios      []*float64 `json:"tpsRatios"`
	P99Ratios      []*float64 `json:"p99Ratios"`
	MedianTPSRatio *float64   `json:"medianTPSRatio"`
	MedianP99Ratio *float64   `json:"medianP99Ratio"`
}

// SettingsDiff lists the parameters whose values differ.
type SettingsDiff struct {
	// Differ are the parameters that change how the server works;
	// Placement those that only say where it listens and what it is
	// called (ports, addresses, names).
	Differ    []SettingDiff `json:"differ"`
	Placement []SettingDiff `json:"placement"`
	Error     string        `json:"error,omitempty"`
}

// SettingDiff is one parameter on both primaries; "—" where one does
// not show it.
type SettingDiff struct {
	Name   string `json:"name"`
	Ours   string `json:"ours"`
	ByHand string `json:"byHand"`
}

// Write writes results.json and results.md into dir.
func Write(dir string, res *Results) error {
	res.Comparisons = Compare(res.Runs, res.Pgbench)
	res.Checks = Checks(res)
	data, err := benchkit.JSON(res)
	if err != nil {
		return err
	}
	return benchkit.WriteFiles(dir, map[string]string{
		"results.json": data,
		"results.md":   Markdown(res),
	})
}

// Rerender rewrites results.md from dir/results.json.
func Rerender(dir string) error {
	res := &Results{}
	if err := benchkit.ReadJSON(dir, res); err != nil {
		return err
	}
	return Write(dir, res)
}

// ResultsDir is where the scenario writes under the benchmark's -out.
func ResultsDir(out string) string { return filepath.Join(out, "pgbench") }
