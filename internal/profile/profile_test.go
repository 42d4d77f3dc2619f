package profile

import (
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	f.Add([]byte("agents:\n  - name: a\n    tools: [calc*]\n    tool_timeout: 3s\n"))
	f.Add([]byte(`{"agents":[{"name":"x","mode":"parallel"}]}`))
	f.Add([]byte("agents: [{name: '[', tools: ['[']}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := Parse(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Name == "" || (p.Mode != "parallel" && p.Mode != "sequential") {
				t.Errorf("accepted profile %+v", p)
			}
		}
	})
}

func TestApprovalProfile(t *testing.T) {
	ps, err := Parse([]byte("agents:\n  - name: ops\n    approve: [delete_*, deploy]\n    approve_destructive: true\n    approval_timeout: 30m\n  - name: plain\n"))
	if err != nil {
		t.Fatal(err)
	}
	if pol := ps[0].Approval(); !pol.Enabled() || !pol.Destructive || pol.Timeout.Minutes() != 30 || len(pol.Tools) != 2 {
		t.Errorf("ops policy = %+v", pol)
	}
	if pol := ps[1].Approval(); pol.Enabled() {
		t.Errorf("plain policy = %+v, want none", pol)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - name: a\n    approve: ['[']\n", `agent "a": approve pattern "["`},
		{"agents:\n  - name: a\n    approval_timeout: soon\n", `agent "a": approval_timeout "soon" is not a positive duration`},
		{"agents:\n  - name: a\n    approval_timeout: -1m\n", `agent "a": approval_timeout "-1m" is not a positive duration`},
	} {
		if _, err := Parse([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

func TestContextProfile(t *testing.T) {
	ps, err := Parse([]byte(`{"agents":[{"name":"long","context_window":32000,"reserve_output":2000,"context_strategy":"truncate",
		"max_tool_result_bytes":-1,"max_tokens_per_run":50000,"max_tokens_per_session":1000000,"max_tool_calls_per_run":40},{"name":"plain"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := ps[0].Context(8000); c.Window != 32000 || c.ReserveOutput != 2000 || c.MaxToolResultBytes != -1 {
		t.Errorf("long context = %+v", c)
	}
	if b := ps[0].Budget(); b.MaxTokensPerRun != 50000 || b.MaxTokensPerSession != 1000000 || b.MaxToolCallsPerRun != 40 {
		t.Errorf("long budget = %+v", b)
	}
	if c := ps[1].Context(8000); c.Window != 8000 || ps[1].ContextStrategy != "truncate" {
		t.Errorf("plain context = %+v (%s), want the model's window and truncate", c, ps[1].ContextStrategy)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - name: a\n    context_strategy: forget\n", `agent "a": context_strategy "forget" is not truncate or summarize`},
		{"agents:\n  - name: a\n    context_window: -5\n", `agent "a": context_window -5 is negative`},
		{"agents:\n  - name: a\n    max_tokens_per_run: -1\n", `agent "a": max_tokens_per_run -1 is negative`},
		{"agents:\n  - name: a\n    max_tool_calls_per_run: -1\n", `agent "a": max_tool_calls_per_run -1 is negative`},
		{"agents:\n  - name: a\n    max_tool_result_bytes: -2\n", `agent "a": max_tool_result_bytes -2 is below -1`},
		{"agents:\n  - name: a\n    context_window: 1000\n    reserve_output: 1000\n", `agent "a": reserve_output 1000 leaves nothing of context_window 1000`},
	} {
		if _, err := Parse([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
