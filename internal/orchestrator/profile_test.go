package orchestrator

import (
	"strings"
	"testing"
)

func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte("agents:\n  - name: a\n    tools: [calc*]\n    tool_timeout: 3s\n"))
	f.Add([]byte(`{"agents":[{"name":"x","mode":"parallel"}]}`))
	f.Add([]byte("agents: [{name: '[', tools: ['[']}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseProfiles(data)
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
	ps, err := ParseProfiles([]byte("agents:\n  - name: ops\n    approve: [delete_*, deploy]\n    approve_destructive: true\n    approval_timeout: 30m\n  - name: plain\n"))
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
		if _, err := ParseProfiles([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseProfiles(%q) = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
