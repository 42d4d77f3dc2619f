package llm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// allTools are the tools of the fleet, as the offline model sees them.
var allTools = []agentfleet.ToolDef{
	{Name: "get_time"}, {Name: "calculator"}, {Name: "sleep"}, {Name: "echo"}, {Name: "list_tools"},
}

// call is a tool call as the offline tests expect it.
type call struct {
	name string
	args string // the argument object's JSON
}

func TestOffline(t *testing.T) {
	earlier := []agentfleet.Message{
		agentfleet.NewUserMessage("time in Tokyo and 2*7"),
		&agentfleet.AssistantMessage{Role: "assistant", Content: []agentfleet.Content{
			{Type: agentfleet.ContentToolCall, ID: "call_1", Name: "get_time", Arguments: json.RawMessage(`"{\"timezone\":\"Asia/Tokyo\"}"`)},
			{Type: agentfleet.ContentToolCall, ID: "call_2", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2*7"}`)},
		}},
	}
	results := func(calcErr bool) []agentfleet.Message {
		calc := &agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_2", ToolName: "calculator", Content: []agentfleet.Content{agentfleet.Text("14")}}
		if calcErr {
			calc.IsError, calc.Content = true, []agentfleet.Content{agentfleet.Text(`calculator: unexpected ")" at column 3`)}
		}
		return append(append([]agentfleet.Message(nil), earlier...),
			&agentfleet.ToolResultMessage{Role: "tool", ToolCallID: "call_1", ToolName: "get_time", Content: []agentfleet.Content{agentfleet.Text("2026-05-01T21:00:00+09:00")}},
			calc)
	}
	user := func(text string) []agentfleet.Message {
		return []agentfleet.Message{agentfleet.NewUserMessage(text)}
	}

	tests := []struct {
		name      string
		msgs      []agentfleet.Message
		tools     []agentfleet.ToolDef // nil: allTools
		wantCalls []call
		wantText  string // a prefix of the text; "" wants none
		wantIDs   []string
	}{
		{name: "time in a city", msgs: user("time in Tokyo"), wantCalls: []call{{"get_time", `{"timezone":"Asia/Tokyo"}`}}, wantIDs: []string{"call_1"}},
		{name: "what time is it in", msgs: user("What time is it in Paris?"), wantCalls: []call{{"get_time", `{"timezone":"Europe/Paris"}`}}},
		{name: "two-word city", msgs: user("what's the time in new  york"), wantCalls: []call{{"get_time", `{"timezone":"America/New_York"}`}}},
		{name: "time in UTC", msgs: user("TIME IN UTC"), wantCalls: []call{{"get_time", `{"timezone":"UTC"}`}}},
		{name: "no city", msgs: user("what time is it?"), wantCalls: []call{{"get_time", `{"timezone":"UTC"}`}}},
		{name: "unknown city", msgs: user("time in Atlantis"), wantCalls: []call{{"get_time", `{"timezone":"UTC"}`}}},
		{name: "arithmetic", msgs: user("What is 2*(3+4)?"), wantCalls: []call{{"calculator", `{"expression":"2*(3+4)"}`}}},
		{name: "arithmetic with spaces and decimals", msgs: user("compute (1.5 + 2.25) / 3 please"), wantCalls: []call{{"calculator", `{"expression":"(1.5 + 2.25) / 3"}`}}},
		{name: "arithmetic in parentheses", msgs: user("a sum (like 2^10)."), wantCalls: []call{{"calculator", `{"expression":"2^10"}`}}},
		{name: "sleep ms", msgs: user("sleep 250"), wantCalls: []call{{"sleep", `{"ms":250}`}}},
		{name: "sleep seconds", msgs: user("please sleep 2s"), wantCalls: []call{{"sleep", `{"ms":2000}`}}},
		{name: "sleep seconds spelled out", msgs: user("Sleep 2 seconds"), wantCalls: []call{{"sleep", `{"ms":2000}`}}},
		{name: "sleep a minute", msgs: user("sleep 1 minute"), wantCalls: []call{{"sleep", `{"ms":60000}`}}},
		{name: "list tools", msgs: user("list tools"), wantCalls: []call{{"list_tools", `{}`}}},
		{name: "what tools", msgs: user("What tools do you have?"), wantCalls: []call{{"list_tools", `{}`}}},
		{name: "echo takes the rest", msgs: user("echo Hello, time in Tokyo 2+2"), wantCalls: []call{{"echo", `{"text":"Hello, time in Tokyo 2+2"}`}}},
		{
			name:      "several requests in one message",
			msgs:      user("time in Tokyo and 2+2"),
			wantCalls: []call{{"get_time", `{"timezone":"Asia/Tokyo"}`}, {"calculator", `{"expression":"2+2"}`}},
			wantIDs:   []string{"call_1", "call_2"},
		},
		{
			name:      "in the order given",
			msgs:      user("2+2, then sleep 10 and the time in San Francisco, then echo bye"),
			wantCalls: []call{{"calculator", `{"expression":"2+2"}`}, {"sleep", `{"ms":10}`}, {"get_time", `{"timezone":"America/Los_Angeles"}`}, {"echo", `{"text":"bye"}`}},
		},
		{
			name:     "missing tool",
			msgs:     user("what is 2+2"),
			tools:    []agentfleet.ToolDef{{Name: "get_time"}},
			wantText: "I would need the tool calculator for this, but it is not available to me (the tools I have are get_time).",
		},
		{
			name:      "one tool of two missing",
			msgs:      user("time in Tokyo and 2+2"),
			tools:     []agentfleet.ToolDef{{Name: "get_time"}},
			wantCalls: []call{{"get_time", `{"timezone":"Asia/Tokyo"}`}},
			wantText:  "I would need the tool calculator",
		},
		{
			name:     "no tools at all",
			msgs:     user("sleep 5"),
			tools:    []agentfleet.ToolDef{},
			wantText: "I would need the tool sleep for this, but it is not available to me (I have no tools).",
		},
		{
			name:      "ask an agent",
			msgs:      user("Ask researcher: what is the tallest tree?"),
			tools:     append([]agentfleet.ToolDef{{Name: "ask_researcher"}}, allTools...),
			wantCalls: []call{{"ask_researcher", `{"message":"what is the tallest tree?"}`}},
		},
		{
			name:      "ask two agents in one batch, after the time",
			msgs:      user("time in Paris, then ask researcher: find trees; and ask coder-2: sleep 2s"),
			tools:     append([]agentfleet.ToolDef{{Name: "ask_researcher"}, {Name: "ask_coder-2"}}, allTools...),
			wantCalls: []call{{"get_time", `{"timezone":"Europe/Paris"}`}, {"ask_researcher", `{"message":"find trees"}`}, {"ask_coder-2", `{"message":"sleep 2s"}`}},
		},
		{
			name:     "ask an agent not listed",
			msgs:     user("ask coder: write it"),
			wantText: "I would need the tool ask_coder for this",
		},
		{
			name:      "transfer to an agent",
			msgs:      user("Transfer me to billing: wants a refund"),
			tools:     append([]agentfleet.ToolDef{{Name: "transfer_to_billing"}}, allTools...),
			wantCalls: []call{{"transfer_to_billing", `{"reason":"wants a refund"}`}},
		},
		{
			name:      "transfer without a reason",
			msgs:      user("please transfer to billing"),
			tools:     append([]agentfleet.ToolDef{{Name: "transfer_to_billing"}}, allTools...),
			wantCalls: []call{{"transfer_to_billing", `{}`}},
		},
		{
			name:     "transfer to an agent not listed",
			msgs:     user("transfer to ghost"),
			wantText: "I would need the tool transfer_to_ghost for this",
		},
		{name: "anything else", msgs: user("Hello there"), wantText: "This is the offline model of agentfleet"},
		{name: "no messages", msgs: nil, wantText: "This is the offline model of agentfleet"},
		{name: "after tool results", msgs: results(false), wantText: "get_time: 2026-05-01T21:00:00+09:00; calculator: 14"},
		{name: "after a failed tool", msgs: results(true), wantText: `get_time: 2026-05-01T21:00:00+09:00; calculator failed: calculator: unexpected ")" at column 3`},
		{
			name:      "ids go on from the conversation",
			msgs:      append(results(false), agentfleet.NewUserMessage("sleep 1 and list tools")),
			wantCalls: []call{{"sleep", `{"ms":1}`}, {"list_tools", `{}`}},
			wantIDs:   []string{"call_3", "call_4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tools := tt.tools
			if tools == nil {
				tools = allTools
			}
			var d deltas
			m, err := Offline{}.Complete(context.Background(), &loop.Request{Messages: tt.msgs, Tools: tools}, d.add)
			if err != nil {
				t.Fatal(err)
			}
			if m.Model != "offline" || m.Provider != "agentfleet" || m.API != "offline" || m.Role != agentfleet.RoleAssistant {
				t.Errorf("model, provider, api, role = %q, %q, %q, %q", m.Model, m.Provider, m.API, m.Role)
			}
			if m.Usage == nil || m.Usage.TotalTokens != m.Usage.InputTokens+m.Usage.OutputTokens {
				t.Errorf("usage = %+v", m.Usage)
			}
			text := agentfleet.JoinText(m.Content)
			if tt.wantText == "" && text != "" || !strings.HasPrefix(text, tt.wantText) {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if got := strings.Join(d.get(), ""); got != text {
				t.Errorf("deltas = %q, want the text %q", got, text)
			}
			if text != "" && len(strings.Fields(text)) > 1 && len(d.get()) < 2 {
				t.Errorf("text came in %d deltas, want it word by word", len(d.get()))
			}

			calls := m.ToolCalls()
			var got []call
			var ids []string
			for _, c := range calls {
				var s string
				if err := json.Unmarshal(c.Arguments, &s); err != nil {
					t.Fatalf("call %s: arguments %s are not a JSON string: %v", c.ID, c.Arguments, err)
				}
				got = append(got, call{c.Name, s})
				ids = append(ids, c.ID)
			}
			if !equalCalls(got, tt.wantCalls) {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
			if tt.wantIDs != nil && strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
				t.Errorf("ids = %v, want %v", ids, tt.wantIDs)
			}
			wantStop := agentfleet.StopReasonStop
			if len(tt.wantCalls) > 0 {
				wantStop = agentfleet.StopReasonToolUse
			}
			if m.StopReason != wantStop {
				t.Errorf("stop reason = %q, want %q", m.StopReason, wantStop)
			}
			// The loop must accept every call the offline model makes.
			for _, c := range loop.ExtractToolCalls(m) {
				if c.ArgumentsError != "" {
					t.Errorf("call %s: %s", c.ID, c.ArgumentsError)
				}
			}
		})
	}
}

func equalCalls(a, b []call) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOfflineCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Offline{}.Complete(ctx, &loop.Request{Messages: []agentfleet.Message{agentfleet.NewUserMessage("hi")}}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
