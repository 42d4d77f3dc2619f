package metrics_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/metrics"
)

// runEvents returns the events of one run the way the loop emits them: two
// turns, the first with two tool calls (one ok after 12.5ms, one failed
// after 1.5s), the second answering; usage 100+20 and 150+30 tokens, which
// run.end carries again as the run's total.
func runEvents(agent, session, runID string) []*agentfleet.Event {
	var seq uint64
	ev := func(e agentfleet.Event, turn int) *agentfleet.Event {
		seq++
		e.Agent, e.Session, e.RunID, e.Turn, e.Seq, e.Time = agent, session, runID, turn, seq, time.Now().UTC()
		return &e
	}
	first := &agentfleet.AssistantMessage{
		Role: agentfleet.RoleAssistant, Model: "test", StopReason: agentfleet.StopReasonToolUse, RunID: runID,
		Content: []agentfleet.Content{
			{Type: agentfleet.ContentToolCall, ID: "call_" + session + "_1", Name: "calculator", Arguments: []byte(`{"expr":"1+1"}`)},
			{Type: agentfleet.ContentToolCall, ID: "call_" + session + "_2", Name: "http_fetch", Arguments: []byte(`{"url":"x"}`)},
		},
		Usage: &agentfleet.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120},
	}
	second := &agentfleet.AssistantMessage{
		Role: agentfleet.RoleAssistant, Model: "test", StopReason: agentfleet.StopReasonStop, RunID: runID,
		Content: []agentfleet.Content{agentfleet.Text("2")},
		Usage:   &agentfleet.Usage{InputTokens: 150, OutputTokens: 30, TotalTokens: 180},
	}
	final := *second
	final.Usage = first.Usage.Add(second.Usage)
	return []*agentfleet.Event{
		ev(agentfleet.Event{Type: agentfleet.EventRunStart}, 0),
		ev(agentfleet.Event{Type: agentfleet.EventTurnStart}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventMessageStart}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventMessageEnd, Message: first}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventToolStart, ToolCallID: "call_" + session + "_1", ToolName: "calculator"}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventToolStart, ToolCallID: "call_" + session + "_2", ToolName: "http_fetch"}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventToolEnd, ToolCallID: "call_" + session + "_1", ToolName: "calculator",
			Result: agentfleet.TextResult("2"), DurationMS: 12.5, Worker: "toolworker/abc", Attempt: 1}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventToolEnd, ToolCallID: "call_" + session + "_2", ToolName: "http_fetch",
			Result: agentfleet.ErrorResult("refused"), IsError: true, DurationMS: 1500, Worker: "toolworker/abc", Attempt: 1}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventTurnEnd}, 1),
		ev(agentfleet.Event{Type: agentfleet.EventTurnStart}, 2),
		ev(agentfleet.Event{Type: agentfleet.EventMessageStart}, 2),
		ev(agentfleet.Event{Type: agentfleet.EventMessageUpdate, Delta: "2"}, 2),
		ev(agentfleet.Event{Type: agentfleet.EventMessageEnd, Message: second}, 2),
		ev(agentfleet.Event{Type: agentfleet.EventTurnEnd}, 2),
		ev(agentfleet.Event{Type: agentfleet.EventRunEnd, StopReason: final.StopReason, Message: &final}, 2),
	}
}

// TestOrchestratorCounts feeds the events of three runs, two of them at
// once, with input, tool attempts and model requests, and checks through
// the HTTP server that every metric moved by the right amount.
func TestOrchestratorCounts(t *testing.T) {
	m := metrics.NewOrchestrator()
	sessions := 0
	var mu sync.Mutex
	m.SetSessions(func() int { mu.Lock(); defer mu.Unlock(); return sessions })
	s := serve(t, m.Registry(), nil)
	before := scrapeOf(t, s)

	// A run that has started and not ended shows as active, with its tool
	// calls in flight.
	open := runEvents("default", "s-open", "run-open")
	for _, e := range open[:6] {
		m.Event(e)
	}
	mid := scrapeOf(t, s)
	checkDeltas(t, before, mid, []delta{
		{"agentfleet_runs_active", nil, 1},
		{"agentfleet_tool_calls_in_flight", nil, 2},
		{"agentfleet_turns_total", nil, 1},
	})

	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			session := fmt.Sprintf("s-%d", i)
			for _, e := range runEvents("default", session, "run-"+session) {
				m.Event(e)
				m.EventPublished(e.Type)
			}
		})
	}
	wg.Wait()
	for _, e := range open[6:] {
		m.Event(e)
	}
	mu.Lock()
	sessions = 3
	mu.Unlock()
	for _, o := range []string{"accepted", "accepted", "accepted", "duplicate", "rejected"} {
		m.Input(o)
	}
	for _, a := range [][2]string{{"calculator", "ok"}, {"http_fetch", "timeout"}, {"http_fetch", "worker_lost"}, {"http_fetch", "error"}, {"calculator", "busy"}} {
		m.ToolAttempt(a[0], a[1])
	}
	m.LLMRequest(800*time.Millisecond, nil, "")
	m.LLMRequest(2*time.Second, errors.New("429"), llm.ClassRateLimit)
	m.LLMRequest(time.Second, errors.New("boom"), "")
	after := scrapeOf(t, s)

	checkDeltas(t, before, after, []delta{
		{"agentfleet_runs_started_total", nil, 3},
		{"agentfleet_runs_ended_total", []string{"stop_reason=stop"}, 3},
		{"agentfleet_runs_ended_total", []string{"stop_reason=error"}, 0},
		{"agentfleet_runs_active", nil, 0},
		{"agentfleet_turns_total", nil, 6},
		{"agentfleet_sessions", nil, 3},
		// message.end only: run.end's total usage is not counted again.
		{"agentfleet_llm_tokens_total", []string{"kind=input"}, 3 * 250},
		{"agentfleet_llm_tokens_total", []string{"kind=output"}, 3 * 50},
		{"agentfleet_tool_call_duration_seconds_count", []string{"tool=calculator", "outcome=ok"}, 3},
		{"agentfleet_tool_call_duration_seconds_sum", []string{"tool=calculator", "outcome=ok"}, 3 * 0.0125},
		{"agentfleet_tool_call_duration_seconds_count", []string{"tool=http_fetch", "outcome=error"}, 3},
		{"agentfleet_tool_call_duration_seconds_sum", []string{"tool=http_fetch", "outcome=error"}, 3 * 1.5},
		{"agentfleet_tool_calls_in_flight", nil, 0},
		{"agentfleet_tool_attempts_total", []string{"tool=calculator", "outcome=ok"}, 1},
		{"agentfleet_tool_attempts_total", []string{"tool=calculator", "outcome=busy"}, 1},
		{"agentfleet_tool_attempts_total", []string{"tool=http_fetch", "outcome=timeout"}, 1},
		{"agentfleet_tool_attempts_total", []string{"tool=http_fetch", "outcome=worker_lost"}, 1},
		{"agentfleet_tool_attempts_total", []string{"tool=http_fetch", "outcome=error"}, 1},
		{"agentfleet_input_messages_total", []string{"outcome=accepted"}, 3},
		{"agentfleet_input_messages_total", []string{"outcome=duplicate"}, 1},
		{"agentfleet_input_messages_total", []string{"outcome=rejected"}, 1},
		{"agentfleet_llm_attempts_total", nil, 3},
		{"agentfleet_llm_request_duration_seconds_count", nil, 3},
		{"agentfleet_llm_request_duration_seconds_sum", nil, 3.8},
		{"agentfleet_llm_errors_total", []string{"class=rate_limit"}, 1},
		{"agentfleet_llm_errors_total", []string{"class=other"}, 1},
		{"agentfleet_llm_errors_total", []string{"class=server"}, 0},
		// Two runs published their 15 events; the open one was only observed.
		{"agentfleet_events_published_total", []string{"type=run.start"}, 2},
		{"agentfleet_events_published_total", []string{"type=tool.end"}, 4},
		{"agentfleet_events_published_total", []string{"type=message.update"}, 2},
	})
	for _, fam := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := after.fams[fam]; !ok {
			t.Errorf("no %s: the Go or process collector is missing", fam)
		}
	}
}

// TestZeroSeries checks that the fixed label values exist at zero before
// anything is counted, so that rate() and the dashboard work from the start.
func TestZeroSeries(t *testing.T) {
	s := scrapeOf(t, serve(t, metrics.NewOrchestrator().Registry(), nil))
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"agentfleet_runs_started_total", nil},
		{"agentfleet_runs_ended_total", []string{"stop_reason=max_turns"}},
		{"agentfleet_runs_ended_total", []string{"stop_reason=aborted"}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassRateLimit}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassServer}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassTimeout}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassConnection}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassClient}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassCanceled}},
		{"agentfleet_llm_errors_total", []string{"class=" + llm.ClassOther}},
		{"agentfleet_llm_tokens_total", []string{"kind=input"}},
		{"agentfleet_input_messages_total", []string{"outcome=duplicate"}},
		{"agentfleet_events_published_total", []string{"type=error"}},
		{"agentfleet_sessions", nil},
	} {
		if v, ok := s.value(c.name, c.labels...); !ok || v != 0 {
			t.Errorf("%s%v = %v, %v; want a series at 0", c.name, c.labels, v, ok)
		}
	}
}

// TestNoUnboundedLabels runs many sessions, with ids in every field that
// could leak, and tools named by a model that invents names, and checks
// that no id reaches a label and that tool labels stay bounded.
func TestNoUnboundedLabels(t *testing.T) {
	m := metrics.NewOrchestrator()
	w := m.Workers()
	for i := range 50 {
		session := fmt.Sprintf("sess-%04d-7f3a9c", i)
		for _, e := range runEvents("default", session, "run-"+session) {
			m.Event(e)
			m.EventPublished(e.Type)
		}
	}
	// A model that invents a new tool name per call; some are not names
	// at all.
	for i := range metrics.MaxTools + 100 {
		name := fmt.Sprintf("made_up_%d", i)
		if i%10 == 0 {
			name = fmt.Sprintf("not a name {%d}", i)
		}
		m.Event(&agentfleet.Event{Type: agentfleet.EventToolStart, ToolName: name})
		m.Event(&agentfleet.Event{Type: agentfleet.EventToolEnd, ToolName: name, IsError: true, DurationMS: 1})
		m.ToolAttempt(name, "no_responders")
		w.Observe(name, "ok", time.Millisecond)
	}
	m.Event(&agentfleet.Event{Type: agentfleet.EventRunEnd, StopReason: "made up \n reason"})
	m.Input(strings.Repeat("x", 500))

	s := scrapeOf(t, serve(t, m.Registry(), nil))
	for _, id := range []string{"sess-", "run-sess", "call_sess", "7f3a9c", "not a name", "made up"} {
		if strings.Contains(s.text, id) {
			t.Errorf("the scrape holds %q, an unbounded value", id)
		}
	}
	for _, fam := range []string{"agentfleet_tool_call_duration_seconds", "agentfleet_tool_attempts_total", "agentfleet_worker_calls_total"} {
		tools := s.labelValues(fam, "tool")
		if len(tools) > metrics.MaxTools+1 {
			t.Errorf("%s has %d tool label values, want at most %d", fam, len(tools), metrics.MaxTools+1)
		}
		if !slices.Contains(tools, metrics.Other) {
			t.Errorf("%s has no %s tool: the names past the bound were lost", fam, metrics.Other)
		}
	}
	// The calls past the bound are still counted, under _other.
	total := 0.0
	for _, tool := range s.labelValues("agentfleet_tool_attempts_total", "tool") {
		total += s.must(t, "agentfleet_tool_attempts_total", "tool="+tool, "outcome=no_responders")
	}
	if want := float64(metrics.MaxTools + 100); total != want {
		t.Errorf("tool attempts total %v, want %v", total, want)
	}
	for name, fam := range s.fams {
		for _, metric := range fam.Metric {
			for _, l := range metric.Label {
				if n := l.GetName(); n == "session" || n == "run_id" || n == "tool_call_id" || n == "agent" {
					t.Errorf("%s has a label %s", name, n)
				}
			}
		}
	}
}

// TestApprovalCounts counts approvals from tool.approval events: each wait
// as requested, each decision by its kind with the time it took.
func TestApprovalCounts(t *testing.T) {
	m := metrics.NewOrchestrator()
	s := serve(t, m.Registry(), nil)
	before := scrapeOf(t, s)
	for _, e := range []agentfleet.Event{
		{Decision: agentfleet.ApprovalPending}, {Decision: agentfleet.ApprovalApproved, DurationMS: 2000},
		{Decision: agentfleet.ApprovalPending}, {Decision: agentfleet.ApprovalRejected, DurationMS: 500},
		{Decision: agentfleet.ApprovalPending}, {Decision: agentfleet.ApprovalTimedOut, DurationMS: 600_000},
	} {
		e.Type = agentfleet.EventToolApproval
		m.Event(&e)
	}
	checkDeltas(t, before, scrapeOf(t, s), []delta{
		{"agentfleet_approvals_total", []string{"decision=requested"}, 3},
		{"agentfleet_approvals_total", []string{"decision=approved"}, 1},
		{"agentfleet_approvals_total", []string{"decision=rejected"}, 1},
		{"agentfleet_approvals_total", []string{"decision=timed_out"}, 1},
		{"agentfleet_approval_decision_seconds_count", []string{"decision=approved"}, 1},
		{"agentfleet_approval_decision_seconds_sum", []string{"decision=approved"}, 2},
		{"agentfleet_approval_decision_seconds_sum", []string{"decision=timed_out"}, 600},
	})
}
