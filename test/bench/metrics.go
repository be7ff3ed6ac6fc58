package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"k8s.io/client-go/kubernetes"
)

// sample is one sample of a metric of the Prometheus text format.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// parseMetrics reads the counter, gauge and untyped samples of the
// Prometheus text format whose metric name is one of names (all when names
// is empty).
func parseMetrics(text string, names ...string) ([]sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	var out []sample
	for name, family := range families {
		if len(names) > 0 && !contains(names, name) {
			continue
		}
		for _, m := range family.GetMetric() {
			s := sample{name: name, labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			switch {
			case m.Counter != nil:
				s.value = m.GetCounter().GetValue()
			case m.Gauge != nil:
				s.value = m.GetGauge().GetValue()
			case m.Untyped != nil:
				s.value = m.GetUntyped().GetValue()
			default:
				continue // histograms and summaries: not needed
			}
			out = append(out, s)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	return slices.Contains(list, s)
}

// requestCounts are the API server's request counters, summed over codes,
// scopes and versions, keyed by "VERB group/resource[/subresource]".
type requestCounts map[string]float64

// writeVerbs are the verbs of apiserver_request_total that change state.
// PATCH with an apply patch is reported as APPLY.
var writeVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE"}

func requestKey(verb, group, resource, subresource string) string {
	gr := resource
	if group != "" {
		gr = group + "/" + resource
	}
	if subresource != "" {
		gr += "/" + subresource
	}
	return verb + " " + gr
}

// scrapeAPIServer reads apiserver_request_total from the API server's
// /metrics.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (requestCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape kube-apiserver /metrics: %w", err)
	}
	samples, err := parseMetrics(string(data), "apiserver_request_total")
	if err != nil {
		return nil, err
	}
	counts := requestCounts{}
	for _, s := range samples {
		key := requestKey(s.labels["verb"], s.labels["group"], s.labels["resource"], s.labels["subresource"])
		counts[key] += s.value
	}
	return counts, nil
}

// readVerbs are the verbs of apiserver_request_total that read.
var readVerbs = []string{"GET", "LIST", "WATCH", "WATCHLIST"}

// writesSince returns the write requests counted between two scrapes.
func (after requestCounts) writesSince(before requestCounts) requestCounts {
	return after.since(before, writeVerbs)
}

// readsSince returns the read requests counted between two scrapes.
func (after requestCounts) readsSince(before requestCounts) requestCounts {
	return after.since(before, readVerbs)
}

func (after requestCounts) since(before requestCounts, verbs []string) requestCounts {
	out := requestCounts{}
	for key, v := range after {
		verb, _, _ := strings.Cut(key, " ")
		if !contains(verbs, verb) {
			continue
		}
		if d := v - before[key]; d > 0 {
			out[key] = d
		}
	}
	return out
}

// sum adds the counts whose resource (group/resource[/subresource]) is
// resource, excluding the verbs in except.
func (c requestCounts) sum(resource string, except ...string) float64 {
	total := 0.0
	for key, v := range c {
		verb, res, _ := strings.Cut(key, " ")
		if res == resource && !contains(except, verb) {
			total += v
		}
	}
	return total
}

// sorted lists the counts, largest first, for the report.
func (c requestCounts) sorted() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%g", k, c[k])
	}
	return out
}

// operatorWrites are the writes attributed to the operator in one window.
type operatorWrites struct {
	// Websites counts writes to websites other than creates (the benchmark
	// creates Websites; the operator never does).
	Websites       float64 `json:"websites"`
	WebsitesStatus float64 `json:"websitesStatus"`
	// Deployments and Services count writes to the main resource only:
	// kube-controller-manager writes deployments/status, never the main
	// resource (checked against the ceiling phase, see ceilingKCMDeploymentWrites).
	Deployments float64 `json:"deployments"`
	Services    float64 `json:"services"`
	// Events counts writes to events.k8s.io and core events by anyone: the
	// scheduler and kube-controller-manager write events too. See
	// OperatorEvents for the operator's own.
	EventsAll float64 `json:"eventsAllWriters"`
}

func (w operatorWrites) children() float64 {
	return w.Websites + w.WebsitesStatus + w.Deployments + w.Services
}

func attribute(c requestCounts) operatorWrites {
	return operatorWrites{
		Websites:       c.sum("example.com/websites", "POST"),
		WebsitesStatus: c.sum("example.com/websites/status"),
		Deployments:    c.sum("apps/deployments"),
		Services:       c.sum("services"),
		EventsAll:      c.sum("events") + c.sum("events.k8s.io/events"),
	}
}

func (w operatorWrites) minus(o operatorWrites) operatorWrites {
	sub := func(a, b float64) float64 {
		if a-b < 0 {
			return 0
		}
		return a - b
	}
	return operatorWrites{
		Websites:       sub(w.Websites, o.Websites),
		WebsitesStatus: sub(w.WebsitesStatus, o.WebsitesStatus),
		Deployments:    sub(w.Deployments, o.Deployments),
		Services:       sub(w.Services, o.Services),
		EventsAll:      sub(w.EventsAll, o.EventsAll),
	}
}

// operatorEndpoint reaches the operator's metrics and probe endpoints.
type operatorEndpoint struct {
	metricsURL string // https://127.0.0.1:PORT/metrics
	probesURL  string // http://127.0.0.1:PORT
	token      string // a token allowed to get /metrics (the admin's)
	client     *http.Client
}

func newOperatorEndpoint(metricsURL, probesURL string, token string) *operatorEndpoint {
	return &operatorEndpoint{
		metricsURL: metricsURL,
		probesURL:  probesURL,
		token:      token,
		client: &http.Client{
			Timeout: 10 * time.Second,
			// The operator serves /metrics with a self-signed certificate.
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		},
	}
}

// waitScrape scrapes the operator's metrics, retrying for up to timeout: the
// metrics server may start after /readyz answers.
func (e *operatorEndpoint) waitScrape(ctx context.Context, timeout time.Duration) ([]sample, error) {
	deadline := time.Now().Add(timeout)
	for {
		samples, err := e.scrape(ctx)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return samples, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (e *operatorEndpoint) scrape(ctx context.Context) ([]sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("operator /metrics: %s", resp.Status)
	}
	return parseMetrics(string(data))
}

// operatorStats are the figures the benchmark reads from the operator's own
// metrics.
type operatorStats struct {
	Reconciles    float64            `json:"reconciles"`
	ReconcileErrs float64            `json:"reconcileErrors"`
	QueueDepth    float64            `json:"queueDepth"`
	Requests      map[string]float64 `json:"clientRequestsByMethod"`
	// ChildReads are the Website controller's reads of children past the
	// cache (platform_operator_child_reads_total), by "kind/reason".
	ChildReads   map[string]float64 `json:"childReadsPastTheCache"`
	HeapInuseMiB float64            `json:"heapInuseMiB"`
	RSSMiB       float64            `json:"processRSSMiB"`
	Goroutines   float64            `json:"goroutines"`
}

func summarizeOperator(samples []sample) operatorStats {
	st := operatorStats{Requests: map[string]float64{}, ChildReads: map[string]float64{}}
	for _, s := range samples {
		switch s.name {
		case "controller_runtime_reconcile_total":
			if s.labels["controller"] == "website" {
				st.Reconciles += s.value
				if s.labels["result"] == "error" {
					st.ReconcileErrs += s.value
				}
			}
		case "workqueue_depth":
			if s.labels["name"] == "website" || s.labels["controller"] == "website" {
				st.QueueDepth += s.value
			}
		case "rest_client_requests_total":
			st.Requests[s.labels["method"]] += s.value
		case "platform_operator_child_reads_total":
			if s.labels["owner_kind"] == "Website" {
				st.ChildReads[s.labels["child_kind"]+"/"+s.labels["reason"]] += s.value
			}
		case "go_memstats_heap_inuse_bytes":
			st.HeapInuseMiB = round3(s.value / (1 << 20))
		case "process_resident_memory_bytes":
			st.RSSMiB = round3(s.value / (1 << 20))
		case "go_goroutines":
			st.Goroutines = s.value
		}
	}
	return st
}
