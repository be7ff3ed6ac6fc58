package benchkit

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

// Sample is one sample of a metric of the Prometheus text format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// ParseMetrics reads the counter, gauge and untyped samples of the
// Prometheus text format whose metric name is one of names (all when names
// is empty), and the sums and counts of histograms, named as the text
// format names them (NAME_sum, NAME_count).
func ParseMetrics(text string, names ...string) ([]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	wanted := func(name string) bool { return len(names) == 0 || slices.Contains(names, name) }
	var out []Sample
	for name, family := range families {
		for _, m := range family.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			var values map[string]float64
			switch {
			case m.Counter != nil:
				values = map[string]float64{name: m.GetCounter().GetValue()}
			case m.Gauge != nil:
				values = map[string]float64{name: m.GetGauge().GetValue()}
			case m.Untyped != nil:
				values = map[string]float64{name: m.GetUntyped().GetValue()}
			case m.Histogram != nil:
				values = map[string]float64{
					name + "_sum":   m.GetHistogram().GetSampleSum(),
					name + "_count": float64(m.GetHistogram().GetSampleCount()),
				}
			}
			for sampleName, v := range values {
				if wanted(sampleName) {
					out = append(out, Sample{Name: sampleName, Labels: labels, Value: v})
				}
			}
		}
	}
	return out, nil
}

// SumSamples adds the values of the samples of metric name whose labels
// include every label of match.
func SumSamples(samples []Sample, name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			total += s.Value
		}
	}
	return total
}

// RequestCounts are the API server's request counters, summed over codes,
// scopes and versions, keyed by "VERB group/resource[/subresource]".
type RequestCounts map[string]float64

// WriteVerbs are the verbs of apiserver_request_total that change state.
// PATCH with an apply patch is reported as APPLY.
var WriteVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION", "CREATE", "UPDATE"}

// ReadVerbs are the verbs of apiserver_request_total that read.
var ReadVerbs = []string{"GET", "LIST", "WATCH", "WATCHLIST"}

// RequestKey is the key of RequestCounts.
func RequestKey(verb, group, resource, subresource string) string {
	gr := resource
	if group != "" {
		gr = group + "/" + resource
	}
	if subresource != "" {
		gr += "/" + subresource
	}
	return verb + " " + gr
}

// ScrapeAPIServer reads apiserver_request_total from the API server's
// /metrics.
func ScrapeAPIServer(ctx context.Context, cs kubernetes.Interface) (RequestCounts, error) {
	samples, err := scrapeAPIServer(ctx, cs, "apiserver_request_total")
	if err != nil {
		return nil, err
	}
	counts := RequestCounts{}
	for _, s := range samples {
		key := RequestKey(s.Labels["verb"], s.Labels["group"], s.Labels["resource"], s.Labels["subresource"])
		counts[key] += s.Value
	}
	return counts, nil
}

// scrapeAPIServer reads the samples of the metrics named from the API
// server's /metrics.
func scrapeAPIServer(ctx context.Context, cs kubernetes.Interface, names ...string) ([]Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	data, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scrape kube-apiserver /metrics: %w", err)
	}
	return ParseMetrics(string(data), names...)
}

// WatchTraffic is what the API server's watches sent, keyed by
// "group/resource" as RequestKey writes it without a verb: events, and
// their encoded bytes, summed over every watcher (an event that three
// clients watch counts three times).
type WatchTraffic struct {
	Events map[string]float64 `json:"events"`
	Bytes  map[string]float64 `json:"bytes"`
}

// ScrapeWatchTraffic reads apiserver_watch_events_total and the sum of
// apiserver_watch_events_sizes from the API server's /metrics.
func ScrapeWatchTraffic(ctx context.Context, cs kubernetes.Interface) (WatchTraffic, error) {
	samples, err := scrapeAPIServer(ctx, cs, "apiserver_watch_events_total", "apiserver_watch_events_sizes_sum")
	if err != nil {
		return WatchTraffic{}, err
	}
	traffic := WatchTraffic{Events: map[string]float64{}, Bytes: map[string]float64{}}
	for _, s := range samples {
		key := strings.TrimPrefix(RequestKey("", s.Labels["group"], s.Labels["resource"], ""), " ")
		if s.Name == "apiserver_watch_events_total" {
			traffic.Events[key] += s.Value
		} else {
			traffic.Bytes[key] += s.Value
		}
	}
	return traffic, nil
}

// Since returns the watch traffic between two scrapes.
func (after WatchTraffic) Since(before WatchTraffic) WatchTraffic {
	diff := func(a, b map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range a {
			if d := v - b[k]; d > 0 {
				out[k] = d
			}
		}
		return out
	}
	return WatchTraffic{Events: diff(after.Events, before.Events), Bytes: diff(after.Bytes, before.Bytes)}
}

// WritesSince returns the write requests counted between two scrapes.
func (after RequestCounts) WritesSince(before RequestCounts) RequestCounts {
	return after.Since(before, WriteVerbs)
}

// ReadsSince returns the read requests counted between two scrapes.
func (after RequestCounts) ReadsSince(before RequestCounts) RequestCounts {
	return after.Since(before, ReadVerbs)
}

// Since returns the requests of verbs counted between two scrapes.
func (after RequestCounts) Since(before RequestCounts, verbs []string) RequestCounts {
	out := RequestCounts{}
	for key, v := range after {
		verb, _, _ := strings.Cut(key, " ")
		if !slices.Contains(verbs, verb) {
			continue
		}
		if d := v - before[key]; d > 0 {
			out[key] = d
		}
	}
	return out
}

// Sum adds the counts whose resource (group/resource[/subresource]) is
// resource, excluding the verbs in except.
func (c RequestCounts) Sum(resource string, except ...string) float64 {
	total := 0.0
	for key, v := range c {
		verb, res, _ := strings.Cut(key, " ")
		if res == resource && !slices.Contains(except, verb) {
			total += v
		}
	}
	return total
}

// Verb adds the counts of one verb on resource.
func (c RequestCounts) Verb(verb, resource string) float64 {
	return c[verb+" "+resource]
}

// Sorted lists the counts, largest first, for a report.
func (c RequestCounts) Sorted() []string {
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

// Endpoint reaches an operator's metrics and probe endpoints.
type Endpoint struct {
	MetricsURL string // https://127.0.0.1:PORT/metrics
	ProbesURL  string // http://127.0.0.1:PORT
	token      string // a token allowed to get /metrics (the admin's)
	client     *http.Client
}

// NewEndpoint reaches the metrics at metricsURL with token.
func NewEndpoint(metricsURL, probesURL string, token string) *Endpoint {
	return &Endpoint{
		MetricsURL: metricsURL,
		ProbesURL:  probesURL,
		token:      token,
		client: &http.Client{
			Timeout: 10 * time.Second,
			// The operator serves /metrics with a self-signed certificate.
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		},
	}
}

// WaitScrape scrapes the operator's metrics, retrying for up to timeout:
// the metrics server may start after /readyz answers.
func (e *Endpoint) WaitScrape(ctx context.Context, timeout time.Duration) ([]Sample, error) {
	deadline := time.Now().Add(timeout)
	for {
		samples, err := e.Scrape(ctx)
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return samples, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Scrape reads the operator's metrics once.
func (e *Endpoint) Scrape(ctx context.Context) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.MetricsURL, nil)
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
	return ParseMetrics(string(data))
}
