package metrics_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/metrics"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var _ orchestrator.Observer = (*metrics.Orchestrator)(nil)

// serve starts a Server for g on a free loopback port, closed when the test
// ends.
func serve(t *testing.T, g prometheus.Gatherer, ready func() error) *metrics.Server {
	t.Helper()
	s, err := metrics.Listen("127.0.0.1:0", "http", g, ready)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// get fetches path from s and returns the status and body.
func get(t *testing.T, s *metrics.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape is one parsed scrape of /metrics, with its text.
type scrape struct {
	text string
	fams map[string]*dto.MetricFamily
}

func scrapeOf(t *testing.T, s *metrics.Server) *scrape {
	t.Helper()
	code, body := get(t, s, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v\n%s", err, body)
	}
	return &scrape{text: body, fams: fams}
}

// value returns the value of the series of name whose labels are those
// given as "k=v" (a counter, gauge, or for a histogram its count), and
// whether there is one. name may end in _count or _sum for histograms.
func (s *scrape) value(name string, labels ...string) (float64, bool) {
	field := ""
	fam, ok := s.fams[name]
	if !ok {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, cut := strings.CutSuffix(name, suffix); cut {
				fam, ok, field = s.fams[base], s.fams[base] != nil, suffix
				break
			}
		}
	}
	if !ok {
		return 0, false
	}
	for _, m := range fam.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil && field == "_sum":
			return m.Histogram.GetSampleSum(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// must returns value, failing the test when the series does not exist.
func (s *scrape) must(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	v, ok := s.value(name, labels...)
	if !ok {
		t.Fatalf("no series %s%v in the scrape", name, labels)
	}
	return v
}

func hasLabels(m *dto.Metric, labels []string) bool {
	if len(labels) != len(m.Label) {
		return false
	}
	have := map[string]string{}
	for _, l := range m.Label {
		have[l.GetName()] = l.GetValue()
	}
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// labelValues returns the values that label takes in the family name.
func (s *scrape) labelValues(name, label string) []string {
	set := map[string]bool{}
	if fam := s.fams[name]; fam != nil {
		for _, m := range fam.Metric {
			for _, l := range m.Label {
				if l.GetName() == label {
					set[l.GetValue()] = true
				}
			}
		}
	}
	var out []string
	for v := range set {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// delta checks that each series moved from before to after by the amount
// wanted.
type delta struct {
	name   string
	labels []string
	want   float64
}

func (d delta) String() string { return fmt.Sprintf("%s%v", d.name, d.labels) }

func checkDeltas(t *testing.T, before, after *scrape, deltas []delta) {
	t.Helper()
	for _, d := range deltas {
		b, _ := before.value(d.name, d.labels...)
		a, ok := after.value(d.name, d.labels...)
		if !ok {
			t.Errorf("%v: no such series after", d)
			continue
		}
		// Sums of durations add floats: compare within a rounding error.
		if got := a - b; math.Abs(got-d.want) > 1e-9 {
			t.Errorf("%v moved by %v, want %v", d, got, d.want)
		}
	}
}
