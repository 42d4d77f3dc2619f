package llm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/script"
)

// toolCallOf returns the only tool call of m, its arguments decoded.
func toolCallOf(t *testing.T, m *agentfleet.AssistantMessage) (agentfleet.Content, map[string]any) {
	t.Helper()
	var calls []agentfleet.Content
	for _, c := range m.Content {
		if c.Type == agentfleet.ContentToolCall {
			calls = append(calls, c)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("%d tool calls (%q), want 1", len(calls), agentfleet.JoinText(m.Content))
	}
	var s string
	if err := json.Unmarshal(calls[0].Arguments, &s); err != nil {
		t.Fatalf("arguments %s are not a JSON string: %v", calls[0].Arguments, err)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("arguments %s are not a JSON object: %v", s, err)
	}
	return calls[0], args
}

// TestOfflineWritesTools runs the three turns of each request the offline
// model writes a tool for, with the tool built from its definition as a
// script worker builds it: write_tool, the call of the new tool, the
// answer with its result.
func TestOfflineWritesTools(t *testing.T) {
	for _, c := range []struct {
		request, tool, result, answer string
	}{
		{"make a tool that doubles numbers", "double", "42", "21 doubled is 42"},
		{"Make a tool that doubles a number, then double 7.5", "double", "15", "7.5 doubled is 15"},
		{"write a tool that adds two numbers", "add", "5", "2 + 3 is 5"},
		{"please write me a tool to add 40 and 2", "add", "42", "40 + 2 is 42"},
		{"create a tool that reverses text", "reverse", "dlrow olleh", `"hello world" reversed is "dlrow olleh"`},
		{`build a small tool that reverses "agentfleet"`, "reverse", "teelftnega", `"agentfleet" reversed is "teelftnega"`},
	} {
		t.Run(c.request, func(t *testing.T) {
			ctx := context.Background()
			tools := append([]agentfleet.ToolDef{{Name: "write_tool"}}, allTools...)
			msgs := []agentfleet.Message{agentfleet.NewUserMessage(c.request)}

			m, err := Offline{}.Complete(ctx, &loop.Request{Messages: msgs, Tools: tools}, nil)
			if err != nil {
				t.Fatal(err)
			}
			wc, args := toolCallOf(t, m)
			if wc.Name != "write_tool" || m.StopReason != agentfleet.StopReasonToolUse {
				t.Fatalf("turn 1 calls %s (%s), want write_tool", wc.Name, m.StopReason)
			}
			def, err := script.DecodeDefinition(args)
			if err != nil {
				t.Fatal(err)
			}
			if def.Name != c.tool {
				t.Fatalf("the definition is of %s, want %s", def.Name, c.tool)
			}
			if err := script.DryRun(ctx, def, script.Env{}); err != nil {
				t.Fatalf("the dry run fails: %v", err)
			}
			tool, err := script.New(def, script.Env{})
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, m, &agentfleet.ToolResultMessage{Role: "tool", ToolCallID: wc.ID, ToolName: "write_tool",
				Content: []agentfleet.Content{agentfleet.Text("Tool " + def.Name + " written (revision 1)")}})
			tools = append(tools, tool.ToolDef)

			m, err = Offline{}.Complete(ctx, &loop.Request{Messages: msgs, Tools: tools}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tc, args := toolCallOf(t, m)
			if tc.Name != c.tool || tc.ID != "call_2" {
				t.Fatalf("turn 2 calls %s (%s), want %s (call_2)", tc.Name, tc.ID, c.tool)
			}
			res, err := tool.Handler.Call(ctx, &agentfleet.Call{ID: tc.ID, Name: tc.Name, Arguments: args})
			if err != nil {
				t.Fatal(err)
			}
			if got := agentfleet.JoinText(res.Content); got != c.result {
				t.Fatalf("%s %v = %q, want %q", c.tool, args, got, c.result)
			}
			msgs = append(msgs, m, &agentfleet.ToolResultMessage{Role: "tool", ToolCallID: tc.ID, ToolName: tc.Name, Content: res.Content})

			m, err = Offline{}.Complete(ctx, &loop.Request{Messages: msgs, Tools: tools}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := agentfleet.JoinText(m.Content); !strings.Contains(got, c.answer) || !strings.HasPrefix(got, "I wrote the tool "+c.tool+"; ") || m.StopReason != agentfleet.StopReasonStop {
				t.Errorf("turn 3 = %q (%s), want it to say it wrote %s and %q", got, m.StopReason, c.tool, c.answer)
			}
		})
	}
}

// TestOfflineSaysWhatItDid asks for a tool the fleet has already: the
// model calls it and says it existed, not that it wrote it. Then "double
// 7" calls the tool double with n 7; without a tool double it does not.
func TestOfflineSaysWhatItDid(t *testing.T) {
	ctx := context.Background()
	tools := append([]agentfleet.ToolDef{{Name: "write_tool"}, {Name: "double"}}, allTools...)
	msgs := []agentfleet.Message{agentfleet.NewUserMessage("make a tool that doubles numbers")}
	m, err := Offline{}.Complete(ctx, &loop.Request{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tc, _ := toolCallOf(t, m)
	if tc.Name != "double" {
		t.Fatalf("turn 1 calls %s, want double (it exists)", tc.Name)
	}
	msgs = append(msgs, m, &agentfleet.ToolResultMessage{Role: "tool", ToolCallID: tc.ID, ToolName: "double", Content: []agentfleet.Content{agentfleet.Text("42")}})
	if m, err = (Offline{}).Complete(ctx, &loop.Request{Messages: msgs, Tools: tools}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := agentfleet.JoinText(m.Content), "The tool double exists already; 21 doubled is 42."; got != want {
		t.Errorf("answer = %q, want %q", got, want)
	}

	msgs = append(msgs, m, agentfleet.NewUserMessage("double 7"))
	if m, err = (Offline{}).Complete(ctx, &loop.Request{Messages: msgs, Tools: tools}, nil); err != nil {
		t.Fatal(err)
	}
	tc, args := toolCallOf(t, m)
	if tc.Name != "double" || args["n"] != float64(7) {
		t.Errorf("double 7 calls %s %v, want double {n: 7}", tc.Name, args)
	}
	m, err = Offline{}.Complete(ctx, &loop.Request{Messages: []agentfleet.Message{agentfleet.NewUserMessage("double 7")}, Tools: allTools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Content {
		if c.Type == agentfleet.ContentToolCall && c.Name == "double" {
			t.Errorf("double 7 without a tool double calls it")
		}
	}
}

// TestOfflineToolRequestEdges: a tool the offline model cannot write, no
// write_tool on offer, and a tool the fleet already has.
func TestOfflineToolRequestEdges(t *testing.T) {
	ask := func(text string, tools []agentfleet.ToolDef) *agentfleet.AssistantMessage {
		t.Helper()
		m, err := Offline{}.Complete(context.Background(), &loop.Request{Messages: []agentfleet.Message{agentfleet.NewUserMessage(text)}, Tools: tools}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	withWrite := append([]agentfleet.ToolDef{{Name: "write_tool"}}, allTools...)
	if m := ask("make a tool that books flights", withWrite); m.StopReason != agentfleet.StopReasonStop || !strings.Contains(agentfleet.JoinText(m.Content), "doubles numbers") {
		t.Errorf("unknown tool: %q (%s)", agentfleet.JoinText(m.Content), m.StopReason)
	}
	if m := ask("make a tool that doubles numbers", allTools); m.StopReason != agentfleet.StopReasonStop || !strings.Contains(agentfleet.JoinText(m.Content), "write_tool") {
		t.Errorf("no write_tool: %q (%s)", agentfleet.JoinText(m.Content), m.StopReason)
	}
	m := ask("make a tool that doubles numbers", append(withWrite, agentfleet.ToolDef{Name: "double"}))
	if c, args := toolCallOf(t, m); c.Name != "double" || args["n"] != 21.0 {
		t.Errorf("existing tool: calls %s %v, want double {n: 21}", c.Name, args)
	}
	// Requests that are not for a tool keep their meaning.
	if c, _ := toolCallOf(t, ask("what is 2*(3+4)?", withWrite)); c.Name != "calculator" {
		t.Errorf("arithmetic calls %s", c.Name)
	}
}
