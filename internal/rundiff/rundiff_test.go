package rundiff

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

func rec(run, kind string, v any) Record {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return Record{RunID: run, Kind: kind, Body: b}
}

func user(text string) *agentfleet.UserMessage { return agentfleet.NewUserMessage(text) }

func assistant(model, text string, in, out int, cost float64, calls ...agentfleet.Content) *agentfleet.AssistantMessage {
	m := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Model: model, Usage: &agentfleet.Usage{InputTokens: in, OutputTokens: out, Cost: cost}}
	if text != "" {
		m.Content = append(m.Content, agentfleet.Text(text))
	}
	m.Content = append(m.Content, calls...)
	return m
}

func call(name, args string) agentfleet.Content {
	return agentfleet.Content{Type: agentfleet.ContentToolCall, ID: "c-" + name, Name: name, Arguments: json.RawMessage(args)}
}

func result(tool, text string, isErr bool) *agentfleet.ToolResultMessage {
	return &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: "c-" + tool, ToolName: tool, Content: []agentfleet.Content{agentfleet.Text(text)}, IsError: isErr}
}

func end(model, text string, in, out int, cost float64) *agentfleet.AssistantMessage {
	m := assistant(model, text, in, out, cost)
	m.StopReason = agentfleet.StopReasonStop
	return m
}

// history is a session of two runs: r1 calls a tool and answers, r2
// answers at once; a fork record and a run after it follow.
func history() []Record {
	return []Record{
		rec("r1", "user", user("what is 2+3?")),
		rec("r1", "assistant", assistant("a", "", 10, 2, 0.001, call("calculator", `{"expression":"2+3"}`))),
		rec("r1", "tool", result("calculator", "5", false)),
		rec("r1", "assistant", assistant("a", "alpha: 5", 20, 3, 0.002)),
		rec("r1", "end", end("a", "alpha: 5", 30, 5, 0.003)),
		rec("r2", "user", user("and 3+4?")),
		rec("r2", "summary", map[string]any{"text": "s", "covers": 3}),
		rec("r2", "assistant", assistant("a", "alpha: 7", 40, 3, 0.004)),
		rec("r2", "end", end("a", "alpha: 7", 40, 3, 0.004)),
		rec("fork-1", "forked", map[string]any{"source": "s0"}),
		rec("r3", "user", user("again")),
	}
}

// TestExtract picks one run out of a history: its first user message,
// its steps in order (tool calls with their arguments, results, records
// other than messages by their kind), its answer, model, tokens and cost
// from its end; a run without end from its last assistant message and the
// sum of their usages; an unknown run and a body that does not decode are
// refused.
func TestExtract(t *testing.T) {
	long := strings.Repeat("x", 500)
	for _, tc := range []struct {
		name string
		recs []Record
		run  string
		want Run
		err  string
	}{
		{"a run with a tool call", history(), "r1", Run{Session: "s", RunID: "r1", User: "what is 2+3?", Steps: []Step{
			{Kind: "assistant", Calls: []Call{{"calculator", `{"expression":"2+3"}`}}, Model: "a", Usage: &agentfleet.Usage{InputTokens: 10, OutputTokens: 2, Cost: 0.001}},
			{Kind: "tool", Tool: "calculator", Text: "5"},
			{Kind: "assistant", Text: "alpha: 5", Model: "a", Usage: &agentfleet.Usage{InputTokens: 20, OutputTokens: 3, Cost: 0.002}},
		}, Ended: true, Answer: "alpha: 5", StopReason: "stop", Model: "a", Usage: &agentfleet.Usage{InputTokens: 30, OutputTokens: 5, Cost: 0.003}}, ""},
		{"a summary record in the run", history(), "r2", Run{Session: "s", RunID: "r2", User: "and 3+4?", Steps: []Step{
			{Kind: "summary"},
			{Kind: "assistant", Text: "alpha: 7", Model: "a", Usage: &agentfleet.Usage{InputTokens: 40, OutputTokens: 3, Cost: 0.004}},
		}, Ended: true, Answer: "alpha: 7", StopReason: "stop", Model: "a", Usage: &agentfleet.Usage{InputTokens: 40, OutputTokens: 3, Cost: 0.004}}, ""},
		{"not ended", []Record{
			rec("r", "user", user("q")),
			rec("r", "assistant", assistant("b", "", 1, 1, 0.5, call("echo", `{}`))),
			rec("r", "tool", result("echo", long, true)),
			rec("r", "user", user("steered")),
			rec("r", "assistant", assistant("b", "beta", 2, 2, 0.25)),
		}, "r", Run{Session: "s", RunID: "r", User: "q", Steps: []Step{
			{Kind: "assistant", Calls: []Call{{"echo", `{}`}}, Model: "b", Usage: &agentfleet.Usage{InputTokens: 1, OutputTokens: 1, Cost: 0.5}},
			{Kind: "tool", Tool: "echo", Error: true, Text: strings.Repeat("x", MaxResultRunes-1) + "…"},
			{Kind: "user", Text: "steered"},
			{Kind: "assistant", Text: "beta", Model: "b", Usage: &agentfleet.Usage{InputTokens: 2, OutputTokens: 2, Cost: 0.25}},
		}, Answer: "beta", Model: "b", Usage: &agentfleet.Usage{InputTokens: 3, OutputTokens: 3, Cost: 0.75}}, ""},
		{"omitted record", []Record{rec("r", "user", user("q")), {RunID: "r", Kind: "tool", Omitted: true, Size: 99999}}, "r",
			Run{Session: "s", RunID: "r", User: "q", Steps: []Step{{Kind: "tool", Text: "(omitted, 99999 bytes)"}}}, ""},
		{"unknown run", history(), "nope", Run{}, `session s has no run "nope"`},
		{"bad body", []Record{{RunID: "r", Kind: "assistant", Body: json.RawMessage(`[1]`)}}, "r", Run{}, "run r: an assistant message"},
	} {
		got, err := Extract("s", tc.recs, tc.run)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestAfterFork finds the replayed run of a fork: the first run after its
// last forked record.
func TestAfterFork(t *testing.T) {
	fork := func(run string) Record { return rec(run, "forked", map[string]any{"source": "s"}) }
	for _, tc := range []struct {
		name string
		recs []Record
		want string
		err  string
	}{
		{"one fork", history(), "r3", ""},
		{"a fork of a fork", append(history(), fork("fork-2"), rec("r4", "user", user("x"))), "r4", ""},
		{"no fork", history()[:5], "", "no forked record"},
		{"nothing after it", history()[:10], "", "no run after its forked record"},
		{"a cut's retained record is no run", append(history()[:10:10], rec("retain-1", "retained", map[string]any{"first_seq": 2}), rec("r4", "user", user("x"))), "r4", ""},
	} {
		got, err := AfterFork(tc.recs)
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %q %v, want %q %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestCompare aligns two runs row by row: same user message, different
// models, steps side by side with "-" where one run has fewer, different
// answers, tokens and costs.
func TestCompare(t *testing.T) {
	a, err := Extract("s1", history(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Extract("s1-replay", []Record{
		rec("x", "user", user("what is 2+3?")),
		rec("x", "assistant", assistant("b", "beta", 10, 1, 0.01)),
		rec("x", "end", end("b", "beta", 10, 1, 0.01)),
	}, "x")
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(a, b)
	want := []Row{
		{"session", "s1", "s1-replay", false},
		{"run", "r1", "x", false},
		{"model", "a", "b", false},
		{"user", "what is 2+3?", "what is 2+3?", true},
		{"1 assistant", `→ calculator {"expression":"2+3"} [10 in, 2 out]`, "beta [10 in, 1 out]", false},
		{"2 tool", "calculator: 5", "-", false},
		{"3 assistant", "alpha: 5 [20 in, 3 out]", "-", false},
		{"answer", "alpha: 5", "beta", false},
		{"stop", "stop", "stop", true},
		{"tokens", "30 in, 5 out", "10 in, 1 out", false},
		{"cost", "$0.003000", "$0.010000", false},
	}
	if !reflect.DeepEqual(d.Rows, want) {
		t.Errorf("rows:\n got %+v\nwant %+v", d.Rows, want)
	}
	if n := d.Differs(); n != 7 {
		t.Errorf("differs in %d rows, want 7", n)
	}
	same := Compare(a, a)
	if n := same.Differs(); n != 0 {
		t.Errorf("a run against itself differs in %d rows", n)
	}
	// Steps of different kinds at one place say both.
	c := Run{Steps: []Step{{Kind: "tool", Tool: "t", Text: "r"}}}
	e := Run{Steps: []Step{{Kind: "handoff"}}}
	if r := Compare(c, e).Rows[4]; r.Label != "1 tool/handoff" || r.A != "t: r" || r.B != "(handoff)" {
		t.Errorf("row %+v", r)
	}
	if got := Tokens(&agentfleet.Usage{TotalTokens: 7}); got != "7 total" {
		t.Errorf("Tokens = %q", got)
	}
}
