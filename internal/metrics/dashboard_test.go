package metrics_test

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/metrics"
	dto "github.com/prometheus/client_model/go"
)

const dashboardFile = "../../deploy/grafana/agentfleet.json"

// registered returns the metric families of an orchestrator and its
// in-process workers after every metric has been touched, by name, with
// the label names of each.
func registered(t *testing.T) map[string][]string {
	t.Helper()
	m := metrics.NewOrchestrator()
	for _, e := range runEvents("default", "s", "r") {
		m.Event(e)
		m.EventPublished(e.Type)
	}
	m.Input("accepted")
	m.ToolAttempt("calculator", "ok")
	m.LLMRequest(time.Second, errors.New("429"), "rate_limit")
	m.SetSessions(func() int { return 1 })
	w := m.Workers()
	w.Observe("calculator", "ok", time.Millisecond)
	w.Observe("calculator", "busy", 0)
	w.SetCapacity(func() int { return 1 }, func() int { return 2 })

	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{}
	for _, f := range fams {
		var labels []string
		for _, metric := range f.Metric {
			for _, l := range metric.Label {
				if !slices.Contains(labels, l.GetName()) {
					labels = append(labels, l.GetName())
				}
			}
		}
		names[f.GetName()] = labels
		if f.GetType() == dto.MetricType_HISTOGRAM {
			names[f.GetName()+"_bucket"] = append(slices.Clone(labels), "le")
			names[f.GetName()+"_count"] = labels
			names[f.GetName()+"_sum"] = labels
		}
	}
	return names
}

// queries returns every PromQL query of a Grafana dashboard: panel targets'
// expr and template variables' queries.
func queries(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "query" && strings.Contains(s, "(")) {
				out = append(out, s)
				continue
			}
			out = append(out, queries(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, queries(x)...)
		}
	}
	return out
}

var (
	metricRE   = regexp.MustCompile(`\b(?:agentfleet|go|process)_[a-zA-Z0-9_]+\b`)
	selectorRE = regexp.MustCompile(`\b((?:agentfleet|go|process)_[a-zA-Z0-9_]+)\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	byRE       = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	labelRE    = regexp.MustCompile(`label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`)
)

// Labels that Prometheus adds to every series, or that the scrape config
// of deploy/prometheus adds.
var targetLabels = []string{"instance", "job", "namespace", "pod", "component"}

// TestDashboardMetricsExist checks that the Grafana dashboard parses, that
// every metric its queries name is one the package registers, with the
// labels it has, and that it shows what the fleet's operators need.
func TestDashboardMetricsExist(t *testing.T) {
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			ID      int    `json:"id"`
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("%s does not parse: %v", dashboardFile, err)
	}
	if dash.Title == "" || dash.UID == "" || len(dash.Panels) == 0 {
		t.Fatalf("%s has no title, uid or panels", dashboardFile)
	}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q has a target without expr or refId", p.Title)
			}
		}
	}

	var raw any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	names := registered(t)
	used := map[string]bool{}
	qs := queries(raw)
	if len(qs) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	for _, q := range qs {
		found := metricRE.FindAllString(q, -1)
		if len(found) == 0 {
			t.Errorf("query names no metric: %s", q)
		}
		var labels []string
		for _, name := range found {
			l, ok := names[name]
			if !ok {
				t.Errorf("query names %s, which the package does not register: %s", name, q)
				continue
			}
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")] = true
			labels = append(labels, l...)
		}
		for _, m := range selectorRE.FindAllStringSubmatch(q, -1) {
			for _, lm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
				if !slices.Contains(names[m[1]], lm[1]) && !slices.Contains(targetLabels, lm[1]) {
					t.Errorf("query selects %s on label %q, which it does not have: %s", m[1], lm[1], q)
				}
			}
		}
		for _, m := range byRE.FindAllStringSubmatch(q, -1) {
			for _, l := range strings.Split(m[1], ",") {
				if l = strings.TrimSpace(l); l != "" && !slices.Contains(labels, l) && !slices.Contains(targetLabels, l) {
					t.Errorf("query groups by %q, a label of none of its metrics: %s", l, q)
				}
			}
		}
		for _, m := range labelRE.FindAllStringSubmatch(q, -1) {
			if !slices.Contains(names[m[1]], m[2]) {
				t.Errorf("variable query asks for label %q of %s, which it does not have", m[2], m[1])
			}
		}
	}
	for _, want := range []string{
		"agentfleet_tool_call_duration_seconds",   // tool latency by tool, error ratio
		"agentfleet_tool_attempts_total",          // fleet outcomes
		"agentfleet_runs_ended_total",             // runs by stop reason
		"agentfleet_llm_tokens_total",             // tokens
		"agentfleet_llm_errors_total",             // model errors
		"agentfleet_llm_request_duration_seconds", // model latency
		"agentfleet_worker_calls_in_flight",       // saturation
		"agentfleet_worker_concurrency_limit",     // saturation
		"agentfleet_worker_calls_rejected_total",  // saturation
		"agentfleet_input_messages_total",         // input outcomes
		"agentfleet_partitions_owned",             // partitions not all owned
		"agentfleet_lease_lost_total",             // lease losses
	} {
		if !used[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	for name := range names {
		if strings.HasPrefix(name, metrics.Namespace+"_") && !used[name] && !strings.HasSuffix(name, "_bucket") &&
			!strings.HasSuffix(name, "_count") && !strings.HasSuffix(name, "_sum") {
			t.Logf("not on the dashboard: %s", name)
		}
	}
}
