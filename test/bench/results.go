package main

import (
	"fmt"
	"time"

	"example.com/platform-operator/test/bench/benchkit"
)

// results is what results.json holds.
type results struct {
	Started     time.Time        `json:"started"`
	Finished    time.Time        `json:"finished"`
	CommandLine string           `json:"commandLine"`
	Args        []string         `json:"args"`
	Machine     benchkit.Machine `json:"machine"`
	// Operator is the binary, its version and flags, and the client
	// settings those flags give it.
	Operator operatorInfo `json:"operator"`
	// Load is the client that creates the Websites of the operator phase
	// and the children of the ceiling phases.
	Load        clientSettings `json:"loadClient"`
	Scenarios   []string       `json:"scenarios"`
	Ns          []int          `json:"ns"`
	IdleWindow  string         `json:"idleWindow"`
	DriftCount  int            `json:"driftIterations"`
	HeapProfile string         `json:"heapProfile"`
	Runs        []*runResult   `json:"runs"`
	Checks      []check        `json:"checks"`
	// Quoted are another operator's figures, measured elsewhere, that the
	// report shows next to the burst: read from -peers when the run
	// started, and rendered from here.
	Quoted *quotedKopf `json:"quotedFromIssueNotMeasuredHere,omitempty"`
	Notes  []string    `json:"notes"`
}

type operatorInfo struct {
	Binary  string   `json:"binary"`
	Version string   `json:"version"`
	Args    []string `json:"extraArgs"`
	// Client is what the operator's own option parsing made of Args: its
	// client-side limit and workers.
	Client clientSettings `json:"client"`
}

// clientSettings describe a client of the API server. A QPS of 0 or less
// means no client-side rate limit (Burst then means nothing).
type clientSettings struct {
	QPS     float64 `json:"qps"`
	Burst   int     `json:"burst"`
	Workers int     `json:"workers"`
}

func (c clientSettings) String() string {
	if c.QPS <= 0 {
		return fmt.Sprintf("no client-side rate limit, %d workers", c.Workers)
	}
	return fmt.Sprintf("%s QPS, burst %d, %d workers", benchkit.TrimFloat(c.QPS), c.Burst, c.Workers)
}

// runResult holds every figure of one N.
type runResult struct {
	N                   int       `json:"n"`
	Nodes               int       `json:"nodes"`
	NodePods            int       `json:"podsPerNode"`
	Started             time.Time `json:"started"`
	Finished            time.Time `json:"finished"`
	ClusterStartSeconds float64   `json:"clusterStartSeconds"`
	WaitDeadline        string    `json:"waitDeadline"`
	Phases              []phase   `json:"phases"`
	// Services is the services scenario: do creates go faster with more
	// workers?
	Services *serviceProbeResult `json:"services,omitempty"`
	// CeilingDeployments creates the Deployments alone, Ceiling the
	// Deployments and the Services.
	CeilingDeployments *ceilingResult `json:"ceilingDeploymentsAlone,omitempty"`
	Ceiling            *ceilingResult `json:"ceiling,omitempty"`
	// Scripted is a plain client doing the work issue 11 allows an
	// operator per Website, without an operator.
	Scripted *scriptedResult `json:"scripted,omitempty"`
	// Kopf is the tutorial's kopf operator doing the same work, when
	// -peer-kopf named one.
	Kopf  *kopfResult  `json:"kopf,omitempty"`
	Burst *burstResult `json:"burst,omitempty"`
	// Rounds, with -rounds above 1, are every round of the ceiling and the
	// burst, this run's own last, and the medians of their ratios.
	Rounds    *roundsResult   `json:"rounds,omitempty"`
	Cost      *costResult     `json:"cost,omitempty"`
	Restart   *restartResult  `json:"restart,omitempty"`
	Drift     []driftResult   `json:"drift,omitempty"`
	Footprint footprintResult `json:"footprint"`
	// ClusterHealth reports NodeNotReady events: the node lifecycle
	// controller marked pods not ready because kwok's node heartbeats came
	// late (an overloaded machine); kwok does not make them ready again.
	ClusterHealth []string `json:"clusterHealth,omitempty"`
	Errors        []string `json:"errors,omitempty"`
}

type phase struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// LoadAvg is /proc/loadavg at the start and the end: the machine is
	// shared.
	LoadAvgStart string `json:"loadAvgStart"`
	LoadAvgEnd   string `json:"loadAvgEnd"`
}

// ceilingResult is a plain client creating (POST) what the operator would
// build for N Websites, without any operator.
type ceilingResult struct {
	// Kinds is what was created: "Deployments and Services" or
	// "Deployments".
	Kinds  string         `json:"kinds"`
	Client clientSettings `json:"client"`
	// CreateCallsSeconds is the time until the last create call returned.
	CreateCallsSeconds float64 `json:"createCallsSeconds"`
	// DeploymentsExist is until every Deployment existed; Exist until every
	// object created existed.
	DeploymentsExist waitResult `json:"deploymentsExist"`
	Exist            waitResult `json:"exist"`
	Available        waitResult `json:"available"`
	CreateErrors     int        `json:"createErrors"`
	FirstError       string     `json:"firstError,omitempty"`
	// Writes are all the API server's write requests from the first create
	// until every Deployment was available.
	Writes benchkit.RequestCounts `json:"writes"`
	// Reads are the API server's read requests (GET, LIST, WATCH) of the
	// same window, by every client.
	Reads benchkit.RequestCounts `json:"reads"`
	// KCMDeploymentMainWrites are writes to deployments (not
	// deployments/status) beyond the benchmark's own N creates: writes of
	// kube-controller-manager to the main resource, expected 0, which
	// justifies attributing every such write to the operator later.
	KCMDeploymentMainWrites float64 `json:"kcmDeploymentMainWrites"`
	// EventWritesNonOperator are the event writes of the control plane for
	// N Deployments without any operator, for comparison with the operator
	// phase.
	EventWritesNonOperator float64            `json:"eventWritesNonOperator"`
	CPUSeconds             map[string]float64 `json:"cpuSeconds"`
}

// scriptedResult is the scripted scenario: the load client creates the
// Websites, and as many workers as the operator has create each one's
// Deployment and Service and write its status twice and one event, as
// issue 11 allows an operator to.
type scriptedResult struct {
	Client             clientSettings `json:"client"`
	CreateCallsSeconds float64        `json:"createCallsSeconds"`
	// Exist is until every Deployment and Service existed, Available until
	// every Deployment was, Ready until every Website's second status
	// (Ready) was seen.
	Exist     waitResult `json:"childrenExist"`
	Available waitResult `json:"available"`
	Ready     waitResult `json:"ready"`
	// ExistRatio and ReadyRatio compare with the ceiling (Deployments and
	// Services), as the burst's do: Ready ÷ the ceiling's Available.
	ExistRatio   *float64 `json:"existRatio,omitempty"`
	ReadyRatio   *float64 `json:"readyVsAvailableRatio,omitempty"`
	CreateErrors int      `json:"createErrors"`
	// WorkErrors are the Websites whose children, first status and event,
	// or Ready status, failed after retries; -1 when the workers had not
	// finished by the deadline.
	WorkErrors int                    `json:"workErrors"`
	FirstError string                 `json:"firstError,omitempty"`
	Writes     benchkit.RequestCounts `json:"writes"`
	Reads      benchkit.RequestCounts `json:"reads"`
	CPUSeconds map[string]float64     `json:"cpuSeconds"`
	// Watch is what the API server's watches sent every watcher, from the
	// first create until every Website was Ready.
	Watch *benchkit.WatchTraffic `json:"watchTraffic,omitempty"`
}

type burstResult struct {
	Client clientSettings `json:"creatingClient"`
	// OperatorStartSeconds is the time from starting the operator process
	// until /readyz answered 200, with no Websites.
	OperatorStartSeconds float64 `json:"operatorStartSeconds"`
	CreateCallsSeconds   float64 `json:"createCallsSeconds"`
	CreateErrors         int     `json:"createErrors"`
	FirstError           string  `json:"firstError,omitempty"`
	// DeploymentsExist is until every Website's Deployment existed, Exist
	// until every Deployment and Service did.
	DeploymentsExist waitResult `json:"deploymentsExist"`
	Exist            waitResult `json:"childrenExist"`
	Ready            waitResult `json:"ready"`
	// ExistRatio and ReadyRatio compare with the ceiling: operator ÷
	// ceiling; nil when either side is missing or timed out.
	// DeploymentsRatio compares the operator's Deployments with the
	// Deployments-alone ceiling.
	ExistRatio       *float64 `json:"existRatio,omitempty"`
	ReadyRatio       *float64 `json:"readyVsAvailableRatio,omitempty"`
	DeploymentsRatio *float64 `json:"deploymentsExistRatio,omitempty"`
	// ScriptedExistRatio and ScriptedReadyRatio compare with the scripted
	// client doing the same work: operator ÷ scripted.
	ScriptedExistRatio *float64 `json:"scriptedExistRatio,omitempty"`
	ScriptedReadyRatio *float64 `json:"scriptedReadyRatio,omitempty"`
	// ReadyLag is, per Website, the time from its Deployment being seen
	// available to the Website being seen Ready: how long its status lagged
	// behind the truth (the Service's endpoints becoming ready included).
	ReadyLag   *lagResult         `json:"readyLag,omitempty"`
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// Writes and Reads are all the API server's requests, by every client,
	// from the first create until every Website was Ready: to compare with
	// the ceiling's.
	Writes benchkit.RequestCounts `json:"writes"`
	Reads  benchkit.RequestCounts `json:"reads"`
	// Watch is what the API server's watches sent every watcher, the
	// operator's included, from the first create until every Website was
	// Ready: the scripted phase's, without an operator, is the reference.
	Watch *benchkit.WatchTraffic `json:"watchTraffic,omitempty"`
	// Operator is what the operator's own metrics said after the burst.
	Operator operatorStats `json:"operatorMetrics"`
}

// lagResult summarizes the delays between two moments of each object.
type lagResult struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50Seconds"`
	P99     float64 `json:"p99Seconds"`
	Max     float64 `json:"maxSeconds"`
}

type costResult struct {
	// CreateWindowSeconds spans from the first create until the writes
	// stopped after every Website was Ready, or the wait for them to stop
	// reached its limit: Settle says which (nil in results written before
	// it was recorded).
	CreateWindowSeconds float64                `json:"createWindowSeconds"`
	Settle              *settleResult          `json:"createWindowSettle,omitempty"`
	CreateRaw           benchkit.RequestCounts `json:"createWritesRaw"`
	Create              operatorWrites         `json:"createWrites"`
	PerWebsite          operatorWrites         `json:"createWritesPerWebsite"`
	// ChildrenPerWebsite is websites+websites/status+deployments+services
	// writes per Website.
	ChildrenPerWebsite float64 `json:"childrenWritesPerWebsite"`
	// OperatorEvents are the events.k8s.io Events whose reportingController
	// is the operator, in the benchmark's namespace, after the burst: one
	// write each, plus one per series.
	OperatorEvents     eventCount     `json:"operatorEvents"`
	EventsPerWebsite   float64        `json:"operatorEventWritesPerWebsite"`
	TotalPerWebsite    float64        `json:"totalWritesPerWebsite"`
	EventsByController map[string]int `json:"eventsByReportingController"`
	// ReconcilesPerWebsite and OperatorRequestsPerWebsite come from the
	// operator's own metrics over the create window.
	ReconcilesPerWebsite       float64            `json:"reconcilesPerWebsite"`
	OperatorRequestsPerWebsite map[string]float64 `json:"operatorRequestsPerWebsiteByMethod"`
	OperatorClientRequests     map[string]float64 `json:"operatorClientRequestsByMethod"`
	// ChildReads are the operator's reads of children past the cache over
	// the create window, by "kind/reason"; issue 11 allows none.
	ChildReads map[string]float64 `json:"operatorChildReads"`
	Idle       *idleResult        `json:"idle,omitempty"`
}

type eventCount struct {
	Objects  int            `json:"objects"`
	Series   int            `json:"series"`
	ByReason map[string]int `json:"byReason"`
}

func (e eventCount) writes() int { return e.Objects + e.Series }

type idleResult struct {
	Seconds        float64                `json:"seconds"`
	Raw            benchkit.RequestCounts `json:"writesRaw"`
	Writes         operatorWrites         `json:"writes"`
	Total          float64                `json:"total"`
	OperatorEvents int                    `json:"operatorEventWrites"`
	// OperatorClientRequests are the operator's own requests by method in
	// the window (leader election renewals included).
	OperatorClientRequests map[string]float64 `json:"operatorClientRequestsByMethod"`
}

type restartResult struct {
	StopSeconds float64 `json:"stopSeconds"`
	// ReadyzSeconds is from starting the new process to /readyz 200;
	// ReadyzFromStopSeconds from sending SIGTERM to the old one.
	ReadyzSeconds         float64 `json:"readyzSeconds"`
	ReadyzFromStopSeconds float64 `json:"readyzFromStopSeconds"`
	// NewWebsiteReady is from creating a new Website, right after /readyz,
	// until it was Ready.
	NewWebsiteReady waitResult `json:"newWebsiteReady"`
	// InitialPass is until the new process had reconciled every Website and
	// its queue was empty, from SIGTERM.
	InitialPass waitResult `json:"initialPass"`
	// WindowSeconds spans from SIGTERM until the writes stopped after the
	// initial pass, or the wait for them to stop reached its limit: Settle
	// says which (nil in results written before it was recorded).
	WindowSeconds float64                `json:"windowSeconds"`
	Settle        *settleResult          `json:"windowSettle,omitempty"`
	WindowRaw     benchkit.RequestCounts `json:"windowWritesRaw"`
	Window        operatorWrites         `json:"windowWrites"`
	// NewWebsiteOwn are the new Website's own writes: its status writes, as
	// the watch saw them, and the creates of its Deployment and Service,
	// which the operator makes once each (a create call that the
	// interceptor-counted tests of internal/controller/website check).
	NewWebsiteOwn operatorWrites `json:"newWebsiteOwnWrites"`
	// Writes = Window − NewWebsiteOwn: the writes the restart caused.
	Writes operatorWrites `json:"restartWrites"`
	Total  float64        `json:"restartWritesTotal"`
	// ExistingStatusChanges counts changes of existing Websites seen by the
	// watch in the window; it should be 0.
	ExistingStatusChanges int `json:"existingWebsiteChanges"`
	// OperatorEvents are the operator's events about existing Websites
	// created in the window.
	OperatorEvents int `json:"operatorEventWrites"`
	// OperatorClientRequests are the new process's own requests by method,
	// from its start to the end of the window (leader election, the caches'
	// lists and watches, and the reads of partially cached children
	// included).
	OperatorClientRequests map[string]float64 `json:"operatorClientRequestsByMethod,omitempty"`
	// ChildReads are the new process's reads of children past the cache,
	// by "kind/reason".
	ChildReads map[string]float64 `json:"childReadsPastTheCache,omitempty"`
}

type driftResult struct {
	Kind     string    `json:"kind"`
	Action   string    `json:"action"`
	Samples  []float64 `json:"samplesSeconds"`
	P50      float64   `json:"p50Seconds"`
	P99      float64   `json:"p99Seconds"`
	Max      float64   `json:"maxSeconds"`
	Timeouts int       `json:"timeouts"`
	Errors   int       `json:"errors"`
}

type footprintResult struct {
	PeakRSSMiB float64 `json:"peakRSSMiB"`
	// AnonAtPeakMiB and FileAtPeakMiB split the peak sample into anonymous
	// memory (heap, stacks) and file-backed pages (mostly the binary's code);
	// PeakAnonMiB is the highest anonymous RSS seen.
	AnonAtPeakMiB float64 `json:"rssAnonAtPeakMiB"`
	FileAtPeakMiB float64 `json:"rssFileAtPeakMiB"`
	PeakAnonMiB   float64 `json:"peakRSSAnonMiB"`
	RSSSamples    int     `json:"rssSamples"`
	SampleEvery   string  `json:"sampleInterval"`
	// HWMMiB is VmHWM of each operator process, read just before it stopped.
	HWMMiB []float64 `json:"vmHWMMiB"`
	// CPUSeconds maps phase → process → CPU seconds (user+system).
	CPUSeconds map[string]map[string]float64 `json:"cpuSeconds"`
	// OperatorCPUSeconds is the operator's CPU over the whole run.
	OperatorCPUSeconds float64 `json:"operatorCPUSeconds"`
	// HeapProfile names the heap profile taken after the burst, relative to
	// the logs folder, when -heap-profile asked for one.
	HeapProfile string `json:"heapProfile,omitempty"`
	// HeapTop is what held the most of the heap in that profile.
	HeapTop []string `json:"heapTop,omitempty"`
}
