package agentfleet_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// eventTypes are every event type, and one that is none of them.
var eventTypes = []agentfleet.EventType{
	agentfleet.EventRunStart, agentfleet.EventRunEnd, agentfleet.EventRunSuspended, agentfleet.EventRunResumed,
	agentfleet.EventTurnStart, agentfleet.EventTurnEnd,
	agentfleet.EventMessageStart, agentfleet.EventMessageUpdate, agentfleet.EventMessageEnd,
	agentfleet.EventToolStart, agentfleet.EventToolUpdate, agentfleet.EventToolEnd, agentfleet.EventToolApproval,
	agentfleet.EventError, agentfleet.EventToolWritten, agentfleet.EventToolDeleted,
	agentfleet.EventContextCompacted, agentfleet.EventBudgetExceeded, agentfleet.EventModelWaiting,
	"custom<&>",
}

// oddStrings need escaping, or look as if they did.
var oddStrings = []string{
	"", "plain", `say "hi"`, `back\slash\`, "\x00\x01\x07\x1f\x7f", "\b\f\n\r\t\v",
	"\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "<script>&amp;</script>",
	"\u2028 and \u2029", "héllo 世界 🎉", "\ufffd", "/slash/", "tab\tend", "\u0080\u00ff\u07ff\uffff",
}

type marshalsItself struct{ V string }

func (m marshalsItself) MarshalJSON() ([]byte, error) {
	return []byte(`{ "v" : "<` + m.V + `>" }`), nil
}

// oddValues are values for arguments, partials and details.
var oddValues = []any{
	nil, "s<>", true, false, 0.0, math.Copysign(0, -1), 1.0, 0.1, -2.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.0,
	math.MaxFloat64, math.SmallestNonzeroFloat64, 42, int64(-7), json.Number("12.50"),
	map[string]any{"b": 1.0, "a": []any{"x", nil, map[string]any{}}, "<k>": "\u2028"},
	map[string]any(nil), []any(nil), []any{}, []string{"a", "b"}, map[string]int{"z": 1, "a": 2},
	struct {
		A string `json:"a"`
		B int    `json:"b,omitempty"`
	}{A: "&"}, (*agentfleet.Usage)(nil), &agentfleet.Usage{InputTokens: 1}, marshalsItself{"x"},
	agentfleet.StopReason("stop"), []byte("bytes"),
}

var oddTimes = []time.Time{
	{}, time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(2025, 12, 31, 23, 59, 59, 999999999, time.UTC),
	time.Date(2025, 6, 1, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600)),
	time.Date(2025, 6, 1, 12, 0, 0, 120000000, time.FixedZone("", -(3*3600+30*60))),
	time.Date(2025, 6, 1, 12, 0, 0, 0, time.Local), time.Now(), time.Unix(0, 0),
}

// oddEvents returns events of every type: each type with each odd string in
// every string field, and sparse and full forms with odd nested values.
func oddEvents() []*agentfleet.Event {
	var events []*agentfleet.Event
	for ti, typ := range eventTypes {
		events = append(events, &agentfleet.Event{Type: typ})
		for si, s := range oddStrings {
			events = append(events, &agentfleet.Event{
				Type: typ, Agent: s, Session: s, RunID: s, TraceID: s, Turn: si - 3, Seq: uint64(si * ti), Time: oddTimes[si%len(oddTimes)],
				StopReason: agentfleet.StopReason(s), Delta: s,
				ToolCallID: s, ToolName: s, IsError: si%2 == 0, Worker: s, Orchestrator: s, Attempt: si, Outcome: s,
				Decision: s, DecisionID: s, Reason: s, Deadline: &oddTimes[(si+3)%len(oddTimes)],
				Annotations:  &agentfleet.Annotations{ReadOnly: si%2 == 0, Idempotent: si%3 == 0, Destructive: si%5 == 0},
				ErrorMessage: s, Subject: s, Payload: s,
				Strategy: s, DroppedTurns: si - 2, DroppedMessages: si * 3, ShortenedResults: -si, TokensBefore: si * 1000, TokensAfter: si,
				Budget: s, Limit: si - 1, Used: si * 7, LimitUSD: float64(si) * 0.0125, UsedUSD: -float64(si) * 1e-7,
				Model: s, Priority: s,
				Parent: parentOf(s, si),
			})
		}
		for vi, v := range oddValues {
			s := oddStrings[vi%len(oddStrings)]
			events = append(events, &agentfleet.Event{
				Type: typ, Agent: "a", Session: "s", RunID: "r", Turn: 1, Seq: uint64(vi), Time: oddTimes[vi%len(oddTimes)],
				StopReason: agentfleet.StopReasonStop,
				Message: &agentfleet.AssistantMessage{
					Role: "assistant", Content: []agentfleet.Content{agentfleet.Text(s), agentfleet.Image("aGk=", "image/png")},
					API: s, Provider: "p", Model: s, Usage: &agentfleet.Usage{InputTokens: vi, OutputTokens: 2, TotalTokens: vi + 2, CachedInputTokens: vi / 2, Cost: float64(vi) * 3.75e-7},
					StopReason: agentfleet.StopReasonToolUse, ErrorMessage: s, RunID: s, Timestamp: oddTimes[(vi+1)%len(oddTimes)],
				},
				ToolCallID: "c", ToolName: "t", Arguments: map[string]any{"v": v, s: vi, "nested": map[string]any{s: v}},
				Partial: v,
				Result: &agentfleet.ToolResult{
					Content: []agentfleet.Content{agentfleet.Text(s), {Type: "tool_call", ID: s, Name: "n", Arguments: json.RawMessage(`{"x": "<&>"}`)},
						{Type: "tool_calls", ToolCalls: []agentfleet.RawToolCall{{ID: "1", Function: &agentfleet.RawFunction{Name: s}}}}},
					Details: map[string]any{"v": v}, Usage: &agentfleet.Usage{TotalTokens: 3, Cost: []float64{0, 0.5, math.NaN(), 2e-7}[vi%4]}, Terminate: vi%2 == 1,
					Worker: "ignored", Attempts: 3,
				},
				IsError: vi%2 == 1, DurationMS: float64(vi) * 0.137, Worker: "w", Attempt: 1,
			})
		}
		events = append(events,
			&agentfleet.Event{Type: typ, Message: &agentfleet.AssistantMessage{}, Result: &agentfleet.ToolResult{}, Arguments: map[string]any{}},
			&agentfleet.Event{Type: typ, Message: &agentfleet.AssistantMessage{Content: []agentfleet.Content{}}, Result: &agentfleet.ToolResult{Content: []agentfleet.Content{}, Details: map[string]any{}}},
			&agentfleet.Event{Type: typ, Partial: (*agentfleet.ToolResult)(nil), DurationMS: -0.5, Attempt: -1},
			&agentfleet.Event{Type: typ, DurationMS: math.Copysign(0, -1), Partial: map[string]any(nil)},
		)
	}
	return events
}

// checkAppendJSON checks that AppendJSON writes what MarshalJSON does, or
// fails where it fails, and that it appends to what b held.
func checkAppendJSON(t *testing.T, e *agentfleet.Event) {
	t.Helper()
	want, wantErr := e.MarshalJSON()
	prefix := []byte("prefix")
	got, err := e.AppendJSON(prefix)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("AppendJSON error %v, MarshalJSON error %v, for %#v", err, wantErr, e)
	}
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("AppendJSON dropped the prefix: %q", got)
	}
	if err != nil {
		if string(got) != "prefix" {
			t.Errorf("AppendJSON failed but returned %q", got)
		}
		return
	}
	if got := got[len("prefix"):]; !bytes.Equal(got, want) {
		t.Fatalf("AppendJSON differs from MarshalJSON for %#v:\n got %s\nwant %s", e, got, want)
	}
	if marshaled, _ := json.Marshal(e); !bytes.Equal(marshaled, want) {
		t.Fatalf("json.Marshal differs from MarshalJSON:\n got %s\nwant %s", marshaled, want)
	}
}

func TestAppendJSONMatchesMarshalJSON(t *testing.T) {
	events := oddEvents()
	for _, e := range events {
		checkAppendJSON(t, e)
	}
	t.Logf("%d events", len(events))
}

// TestAppendJSONErrors checks that AppendJSON fails where MarshalJSON does:
// unsupported numbers, values and times, and broken raw JSON.
func TestAppendJSONErrors(t *testing.T) {
	for _, e := range []*agentfleet.Event{
		{Type: agentfleet.EventToolEnd, DurationMS: math.NaN()},
		{Type: agentfleet.EventToolEnd, DurationMS: math.Inf(1)},
		{Type: agentfleet.EventToolStart, Arguments: map[string]any{"x": math.Inf(-1)}},
		{Type: agentfleet.EventToolStart, Arguments: map[string]any{"x": []any{make(chan int)}}},
		{Type: agentfleet.EventToolUpdate, Partial: func() {}},
		{Type: agentfleet.EventRunStart, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Type: agentfleet.EventRunStart, Time: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Type: agentfleet.EventRunStart, Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))},
		{Type: agentfleet.EventRunEnd, Message: &agentfleet.AssistantMessage{Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{Type: agentfleet.EventToolEnd, Result: &agentfleet.ToolResult{Details: map[string]any{"x": math.NaN()}}},
		{Type: agentfleet.EventToolEnd, Result: &agentfleet.ToolResult{Content: []agentfleet.Content{{Type: "tool_call", Arguments: json.RawMessage(`{`)}}}},
	} {
		if _, err := e.MarshalJSON(); err == nil {
			t.Errorf("MarshalJSON of %#v did not fail", e)
		}
		checkAppendJSON(t, e)
	}
}

// TestAppendJSONDeep checks values nested deeper than AppendJSON writes by
// hand: a deep one is written as Marshal writes it, a cycle fails.
func TestAppendJSONDeep(t *testing.T) {
	deep := map[string]any{"leaf": "<end>"}
	for i := range 100 {
		if i%2 == 0 {
			deep = map[string]any{"m": deep, "n": float64(i)}
		} else {
			deep = map[string]any{"l": []any{deep, i}}
		}
	}
	checkAppendJSON(t, &agentfleet.Event{Type: agentfleet.EventToolStart, Arguments: deep, Partial: []any{deep}})
	cycle := map[string]any{}
	cycle["self"] = cycle
	list := []any{nil}
	list[0] = list
	for _, e := range []*agentfleet.Event{
		{Type: agentfleet.EventToolStart, Arguments: cycle},
		{Type: agentfleet.EventToolUpdate, Partial: list},
		{Type: agentfleet.EventToolEnd, Result: &agentfleet.ToolResult{Details: map[string]any{"c": cycle}}},
	} {
		if _, err := e.MarshalJSON(); err == nil {
			t.Fatal("MarshalJSON of a cycle did not fail")
		}
		checkAppendJSON(t, e)
	}
}

func FuzzEventJSON(f *testing.F) {
	for i, s := range oddStrings {
		f.Add(uint8(i), s, oddStrings[(i+1)%len(oddStrings)], "<&>", int64(i-2), uint64(i), float64(i)*0.3, int64(i)*1e17, i%2 == 0)
	}
	f.Add(uint8(11), "", "", "", int64(0), uint64(0), 1e21, int64(-1), true)
	f.Add(uint8(9), "\u2028", "\xff", "x", int64(-1), uint64(math.MaxUint64), 1e-7, int64(math.MaxInt64), false)
	f.Fuzz(func(t *testing.T, typ uint8, s1, s2, s3 string, n int64, seq uint64, dur float64, nanos int64, isErr bool) {
		tm := time.Unix(0, nanos).In(time.FixedZone("", int(n%(26*3600))))
		e := &agentfleet.Event{
			Type: eventTypes[int(typ)%len(eventTypes)], Agent: s1, Session: s2, RunID: s3, TraceID: s1, Turn: int(n), Seq: seq, Time: tm,
			StopReason: agentfleet.StopReason(s3), Delta: s1,
			ToolCallID: s2, ToolName: s1, IsError: isErr, DurationMS: dur, Worker: s3, Orchestrator: s2, Attempt: int(n >> 3), Outcome: s1,
			Decision: s3, DecisionID: s1, Reason: s2, Deadline: &tm, Annotations: &agentfleet.Annotations{Destructive: isErr},
			ErrorMessage: s2, Subject: s3, Payload: s1,
		}
		checkAppendJSON(t, e)
		e.Arguments = map[string]any{s1: s2, s2: dur, s3: []any{s1, n, nil, map[string]any{s2: isErr}}}
		e.Partial = map[string]any{"text": s3, "n": float64(n)}
		e.Result = &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text(s1), {Type: s2, Data: s3, MIMEType: s1, ID: s2, Name: s3}},
			Details: map[string]any{s3: s1}, Terminate: isErr}
		e.Message = &agentfleet.AssistantMessage{Role: s1, Content: []agentfleet.Content{agentfleet.Text(s2)}, Model: s3, RunID: s1, Timestamp: tm,
			Usage: &agentfleet.Usage{InputTokens: int(n), OutputTokens: int(seq), TotalTokens: int(nanos)}}
		checkAppendJSON(t, e)
	})
}

// parentOf returns a parent of odd strings, with a chain of n%3 entries
// and a budget of tokens, tool calls, both or none by n%5, and none for
// every fourth n.
func parentOf(s string, n int) *agentfleet.Parent {
	if n%4 == 3 {
		return nil
	}
	p := &agentfleet.Parent{Agent: s, Session: s, RunID: s, ToolCallID: s}
	for range n % 3 {
		p.Chain = append(p.Chain, s)
	}
	switch n % 5 {
	case 1:
		p.Budget = &agentfleet.Budget{Tokens: 1000 + n}
	case 2:
		p.Budget = &agentfleet.Budget{ToolCalls: n}
	case 3:
		p.Budget = &agentfleet.Budget{Tokens: 1 << 40, ToolCalls: 7}
	case 4:
		p.Budget = &agentfleet.Budget{}
	}
	return p
}
