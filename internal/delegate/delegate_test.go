package delegate_test

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/mcpserver"
)

// TestIDs: the child session and the message id are a function of the
// parent's call, different for any other call, and valid tokens.
func TestIDs(t *testing.T) {
	base := agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "r1", ToolCallID: "call_1"}
	if got, want := delegate.ChildSession(&base), delegate.ChildSession(&agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "r1", ToolCallID: "call_1", Chain: []string{"boss"}}); got != want {
		t.Errorf("the chain changed the child session: %s, %s", got, want)
	}
	if err := bus.CheckToken("session", delegate.ChildSession(&base)); err != nil || !delegate.IsChildSession(delegate.ChildSession(&base)) {
		t.Errorf("child session %s: %v, IsChildSession %v", delegate.ChildSession(&base), err, delegate.IsChildSession(delegate.ChildSession(&base)))
	}
	seen := map[string]string{delegate.ChildSession(&base): "base", delegate.MsgID(&base): "base msg"}
	for _, tc := range []struct {
		name string
		p    agentfleet.Parent
	}{
		{"other agent", agentfleet.Parent{Agent: "bos", Session: "s1", RunID: "r1", ToolCallID: "call_1"}},
		{"other session", agentfleet.Parent{Agent: "boss", Session: "s2", RunID: "r1", ToolCallID: "call_1"}},
		{"other run", agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "r2", ToolCallID: "call_1"}},
		{"other call", agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "r1", ToolCallID: "call_2"}},
		// Without length prefixes these two would hash alike.
		{"shifted boundary", agentfleet.Parent{Agent: "boss", Session: "s1r", RunID: "1", ToolCallID: "call_1"}},
	} {
		for _, id := range []string{delegate.ChildSession(&tc.p), delegate.MsgID(&tc.p)} {
			if prev, dup := seen[id]; dup {
				t.Errorf("%s: id %s also belongs to %s", tc.name, id, prev)
			}
			seen[id] = tc.name
		}
	}
}

// TestCheck: the depth and cycle bounds of a call, as the model sees them.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name          string
		chain         []string
		caller, child string
		max           int
		want          string // the child's chain, or a part of the error
	}{
		{"client's run", nil, "boss", "researcher", 0, "boss"},
		{"second level", []string{"boss"}, "researcher", "coder", 0, "boss,researcher"},
		{"third level, the default limit", []string{"boss", "researcher"}, "coder", "tester", 0, "boss,researcher,coder"},
		{"fourth level", []string{"boss", "researcher", "coder"}, "tester", "writer", 0, "refused: asking agent writer would nest delegations 4 deep (boss → researcher → coder → tester → writer), the limit is 3"},
		{"depth one", []string{"boss"}, "researcher", "coder", 1, "nest delegations 2 deep"},
		{"self", nil, "boss", "boss", 0, "refused: agent boss is already waiting in this delegation (boss → boss)"},
		{"A → B → A", []string{"boss"}, "researcher", "boss", 0, "refused: agent boss is already waiting in this delegation (boss → researcher → boss), so asking it would be a cycle"},
		{"deeper cycle", []string{"a", "b"}, "c", "b", 10, "already waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, err := delegate.Check(tc.chain, tc.caller, tc.child, tc.max)
			got := strings.Join(next, ",")
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("Check = %q, want %q", got, tc.want)
			}
		})
	}
	chain := make([]string, 1, 4)
	chain[0] = "a"
	n1, _ := delegate.Check(chain, "b", "x", 5)
	n2, _ := delegate.Check(chain, "c", "y", 5)
	if n1[1] != "b" || n2[1] != "c" {
		t.Errorf("two children of one chain share its array: %v, %v", n1, n2)
	}
}

// TestAdmit: the receiving side's bounds on what an ask's headers claim.
func TestAdmit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      *agentfleet.Parent
		target string
		want   string // "" for admitted
	}{
		{"client's ask", nil, "boss", ""},
		{"child", &agentfleet.Parent{Chain: []string{"boss"}}, "researcher", ""},
		{"at the limit", &agentfleet.Parent{Chain: []string{"a", "b", "c"}}, "d", ""},
		{"past the limit", &agentfleet.Parent{Chain: []string{"a", "b", "c", "d"}}, "e", "header Agentfleet-Parent-Chain: the delegation a → b → c → d → e is 4 deep, the limit is 3"},
		{"cycle", &agentfleet.Parent{Chain: []string{"boss", "researcher"}}, "boss", "header Agentfleet-Parent-Chain: agent boss is already waiting in the delegation boss → researcher"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := delegate.Admit(tc.p, tc.target, 0)
			if got := errText(err); tc.want == "" && err != nil || !strings.Contains(got, tc.want) {
				t.Errorf("Admit = %v, want %q", err, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestHeaders: the parent headers round-trip, and hostile values are
// refused with the header named.
func TestHeaders(t *testing.T) {
	p := &agentfleet.Parent{Agent: "boss", Session: "s1", RunID: "0b6f-1", ToolCallID: "toolu_01A:x", Chain: []string{"root", "boss"}}
	h := delegate.Encode(p)
	got, err := delegate.Parse(func(k string) string { return h[k] })
	if err != nil || got.Agent != p.Agent || got.Session != p.Session || got.RunID != p.RunID || got.ToolCallID != p.ToolCallID || strings.Join(got.Chain, ",") != "root,boss" {
		t.Fatalf("Parse(Encode(p)) = %+v, %v", got, err)
	}
	if got, err := delegate.Parse(func(string) string { return "" }); got != nil || err != nil {
		t.Errorf("no headers: %+v, %v; want nil, nil", got, err)
	}
	with := func(k, v string) map[string]string {
		m := delegate.Encode(p)
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name string
		h    map[string]string
		want string
	}{
		{"one alone", map[string]string{delegate.HeaderAgent: "boss"}, "header Agentfleet-Parent-Session is missing"},
		{"chain missing", with(delegate.HeaderChain, ""), "header Agentfleet-Parent-Chain is missing"},
		{"agent with a dot", with(delegate.HeaderAgent, "a.b"), `header Agentfleet-Parent-Agent: agent name "a.b" may hold only`},
		{"session wildcard", with(delegate.HeaderSession, ">"), "header Agentfleet-Parent-Session: session name"},
		{"run with a space", with(delegate.HeaderRun, "r 1"), `header Agentfleet-Parent-Run: byte 2 is 0x20`},
		{"call with a control byte", with(delegate.HeaderCall, "c\x00"), `header Agentfleet-Parent-Call: byte 2 is 0x00`},
		{"call too long", with(delegate.HeaderCall, strings.Repeat("c", 257)), "header Agentfleet-Parent-Call: 257 bytes long, the limit is 256"},
		{"long agent", with(delegate.HeaderAgent, strings.Repeat("a", 200)), "header Agentfleet-Parent-Agent: agent name is 200 bytes long"},
		{"chain too long", with(delegate.HeaderChain, strings.Repeat("a,", 20)+"boss"), "header Agentfleet-Parent-Chain names 21 agents, the limit is 16"},
		{"chain with an empty entry", with(delegate.HeaderChain, "root,,boss"), "header Agentfleet-Parent-Chain, entry 2: agent name is empty"},
		{"chain not ending with the parent", with(delegate.HeaderChain, "boss,root"), `header Agentfleet-Parent-Chain ends with agent "root", not with the parent agent "boss"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := delegate.Parse(func(k string) string { return tc.h[k] })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %+v, %v; want an error with %q", got, err, tc.want)
			}
		})
	}
}

// TestArgs: the arguments of an ask tool.
func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		name string
		args map[string]any
		want string // "message|session" or a part of the error
	}{
		{"message", map[string]any{"message": "find x"}, "find x|"},
		{"with session", map[string]any{"message": "more", "session": "d-0123456789abcdef01234567"}, "more|d-0123456789abcdef01234567"},
		{"a client's session", map[string]any{"message": "more", "session": "alice"}, `Tool ask_r: argument session "alice" is not a session that an earlier call returned`},
		{"almost a child session", map[string]any{"message": "more", "session": "d-0123456789ABCDEF01234567"}, "is not a session that an earlier call returned"},
		{"empty session", map[string]any{"message": "m", "session": ""}, "m|"},
		{"null session", map[string]any{"message": "m", "session": nil}, "m|"},
		{"no message", map[string]any{}, "Tool ask_r: argument message must be a non-empty string"},
		{"blank message", map[string]any{"message": "  "}, "argument message must be a non-empty string"},
		{"number message", map[string]any{"message": 3.0}, "argument message must be a non-empty string"},
		{"session not a string", map[string]any{"message": "m", "session": 1.0}, "argument session must be a string"},
		{"session subject", map[string]any{"message": "m", "session": "a.>"}, `Tool ask_r: argument session: session name "a.>" may hold only`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, s, err := delegate.Args("ask_r", tc.args)
			got := m + "|" + s
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("Args = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestResult: a child's final message as the parent's tool result.
func TestResult(t *testing.T) {
	final := func(sr agentfleet.StopReason, text, errMsg string) *agentfleet.AssistantMessage {
		return &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text(text)}, StopReason: sr, ErrorMessage: errMsg, RunID: "run-9",
			Usage: &agentfleet.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12}}
	}
	for _, tc := range []struct {
		name    string
		final   *agentfleet.AssistantMessage
		text    string
		isError bool
	}{
		{"answer", final(agentfleet.StopReasonStop, "42", ""), "42", false},
		{"terminated by a tool", final(agentfleet.StopReasonToolTerminated, "done", ""), "done", false},
		{"model failed", final(agentfleet.StopReasonError, "", "model: 500"), "agent r stopped with error: model: 500", true},
		{"aborted", final(agentfleet.StopReasonAborted, "", "run aborted: stop"), "agent r stopped with aborted: run aborted: stop", true},
		{"turn limit", final(agentfleet.StopReasonMaxTurns, "half", "the run reached its limit of 2 turns"), "agent r stopped with max_turns: the run reached its limit of 2 turns; its last text: half", true},
		{"nothing", nil, "agent r: no final message", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, isError := delegate.Result("r", "d-1", tc.final)
			if got := agentfleet.JoinText(res.Content); got != tc.text || isError != tc.isError {
				t.Errorf("Result = %q, %v; want %q, %v", got, isError, tc.text, tc.isError)
			}
			if tc.final != nil && (res.Details["session"] != "d-1" || res.Details["run_id"] != "run-9" || res.Usage == nil || res.Usage.TotalTokens != 12) {
				t.Errorf("details = %v", res.Details)
			}
		})
	}
}

// TestToolName: the tool is the one /mcp offers for the same agent.
func TestToolName(t *testing.T) {
	if delegate.ToolPrefix != mcpserver.AskPrefix {
		t.Errorf("ToolPrefix %q, /mcp's %q", delegate.ToolPrefix, mcpserver.AskPrefix)
	}
	tool := delegate.Tool("researcher", 0)
	if tool.Name != "ask_researcher" || !tool.Parallel || !tool.Annotations.Idempotent || tool.Handler != nil {
		t.Errorf("tool = %+v", tool.ToolDef)
	}
}

// TestServing: which agent serves a session, given the targets of its
// stored handoffs of runs that ended.
func TestServing(t *testing.T) {
	known := func(n string) bool { return n == "support" || n == "billing" || n == "refunds" }
	for _, tc := range []struct {
		name     string
		handoffs []string
		want     string // serving, then the skipped after a '|'
	}{
		{"never handed over", nil, "support|"},
		{"handed over once", []string{"billing"}, "billing|"},
		{"a chain", []string{"billing", "refunds"}, "refunds|"},
		{"and back", []string{"billing", "support"}, "support|"},
		{"to an agent removed since", []string{"ghost"}, "support|ghost"},
		{"past a removed one", []string{"billing", "ghost"}, "billing|ghost"},
		{"a removed one passed", []string{"ghost", "refunds"}, "refunds|ghost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serving, skipped := delegate.Serving("support", tc.handoffs, known)
			if got := serving + "|" + strings.Join(skipped, ","); got != tc.want {
				t.Errorf("Serving = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTransfer: the transfer tool, its arguments and its result.
func TestTransfer(t *testing.T) {
	tool := delegate.TransferTool("billing")
	if tool.Name != "transfer_to_billing" || tool.Parallel || !tool.Annotations.Idempotent || tool.Handler != nil || !strings.Contains(string(tool.InputSchema), `"reason"`) {
		t.Errorf("tool = %+v", tool.ToolDef)
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want string // the reason, or a part of the error
	}{
		{"no reason", map[string]any{}, ""},
		{"null reason", map[string]any{"reason": nil}, ""},
		{"a reason", map[string]any{"reason": " a refund "}, "a refund"},
		{"a number", map[string]any{"reason": 3.0}, "Tool transfer_to_billing: argument reason must be a string"},
		{"too long", map[string]any{"reason": strings.Repeat("r", delegate.MaxReasonBytes+1)}, "argument reason is 1025 bytes long, the limit is 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := delegate.TransferArgs("transfer_to_billing", tc.args)
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) || tc.want == "" && got != "" {
				t.Errorf("TransferArgs = %q, want %q", got, tc.want)
			}
		})
	}
	res := delegate.TransferResult("support", "billing", "a refund")
	if got := agentfleet.JoinText(res.Content); !res.Terminate || got != "Agent support handed this conversation over to agent billing, which answers your next messages. Reason: a refund" {
		t.Errorf("result = %q, terminate %v", got, res.Terminate)
	}
}
