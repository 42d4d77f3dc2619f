package profile

import (
	"strings"
	"testing"
)

// TestForkModel decides which models a fork of an agent may choose: its
// own, none named, or one of its fork_models; any other is refused with
// the models it may choose.
func TestForkModel(t *testing.T) {
	open := Profile{Name: "a", Model: "m1", ForkModels: []string{"m2", "m3"}}
	closed := Profile{Name: "c", Model: "m1"}
	for _, tc := range []struct {
		name  string
		p     Profile
		model string
		err   string
	}{
		{"none named", open, "", ""},
		{"its own", closed, "m1", ""},
		{"listed", open, "m3", ""},
		{"not listed", open, "m9", `agent "a" may not be forked onto model "m9": the models a fork of it may choose are m2, m3`},
		{"no list", closed, "m2", "none (its profile lists no fork_models)"},
		{"case matters", open, "M2", `model "M2"`},
	} {
		err := tc.p.ForkModel(tc.model)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// TestForkModelsProfile checks fork_models in an agents file: names
// without white space, each once, and with endpoints each served by one.
func TestForkModelsProfile(t *testing.T) {
	ps, err := Parse([]byte("agents:\n  - name: a\n    fork_models: [m2, m3]\n"))
	if err != nil || len(ps[0].ForkModels) != 2 {
		t.Fatalf("%+v %v", ps, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"agents:\n  - name: a\n    fork_models: [m2, m2]\n", `agent "a": fork_models entry 2: model "m2" is listed twice`},
		{"agents:\n  - name: a\n    fork_models: ['a b']\n", `agent "a": fork_models entry 1: name "a b" is empty, too long or has white space`},
		{"agents:\n  - name: a\n    fork_models: ['']\n", `fork_models entry 1: name "" is empty`},
		{"agents:\n  - name: a\n    fork_models: m2\n", "cannot unmarshal"},
		{"endpoints:\n  - name: e\n    base_url: http://127.0.0.1:1/v1\n    models: [{name: m1}]\nagents:\n  - name: a\n    model: m1\n    fork_models: [m2]\n", `agent "a": fork_models entry "m2" is not served by any endpoint (the endpoints serve m1)`},
	} {
		if _, err := ParseConfig([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
