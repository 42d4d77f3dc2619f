package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/cost"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/rundiff"
)

// startTwoModels starts a fleet whose agent default runs on model "a"
// (a test model server that answers "alpha") and may be forked onto
// model "b" (another that answers "beta answers"), each priced; it
// returns the NATS URL and the two servers.
func startTwoModels(t *testing.T) (string, *llmtest.RateServer, *llmtest.RateServer) {
	t.Helper()
	srvA := llmtest.NewRateServer(t, 0, "", llmtest.Reply{Model: "a", Text: "alpha"})
	srvB := llmtest.NewRateServer(t, 0, "", llmtest.Reply{Model: "b", Text: "beta answers"})
	model := func(srv *llmtest.RateServer, name string, p cost.Price) loop.Model {
		c, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), Model: name, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return &cost.Model{Next: c, Prices: map[string]cost.Price{name: p}, Default: name}
	}
	a := model(srvA, "a", cost.Price{Input: 1, Output: 2})
	b := model(srvB, "b", cost.Price{Input: 3, Output: 6})
	url := startFleetConfig(t, orchestrator.Config{
		Model: a, ModelName: "a",
		ModelFor: func(p *orchestrator.Profile) loop.Model {
			if p.Model == "b" {
				return b
			}
			return a
		},
		Profiles: []orchestrator.Profile{{Name: "default", Model: "a", ForkModels: []string{"b"}}},
	})
	return url, srvA, srvB
}

// TestReplayOtherModel asks a session twice on model a, replays its first
// run on model b into a new session, and compares: the new session holds
// the fork's records and a run answered by b, the source is untouched,
// and diff shows alpha against beta with their tokens and costs. A replay
// with the agent's model, one taking the model from a profile file, and
// one of the second run (the first run copied before it) work too; an
// unknown run, a model the agent does not allow, a profile that sets more
// than the model and a replay into a session that exists are refused.
func TestReplayOtherModel(t *testing.T) {
	url, srvA, srvB := startTwoModels(t)
	for _, text := range []string{"first question", "second question"} {
		if stdout, stderr, err := run(t, url, "ask", "default", "s1", text); err != nil || stdout != "alpha\n" {
			t.Fatalf("ask: %q %v %s", stdout, err, stderr)
		}
	}
	records := func(session string) []client.HistoryRecordJSON {
		t.Helper()
		stdout, stderr, err := run(t, url, "history", "--json", "default", session)
		if err != nil {
			t.Fatalf("history %s: %v %s", session, err, stderr)
		}
		var out historyJSON
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("history --json: %v\n%s", err, stdout)
		}
		return out.Records
	}
	src := records("s1")
	var runs []string
	for _, r := range src {
		if len(runs) == 0 || runs[len(runs)-1] != r.RunID {
			runs = append(runs, r.RunID)
		}
	}
	if len(runs) != 2 {
		t.Fatalf("runs of s1: %v", runs)
	}
	askedA, askedB := srvA.Count(), srvB.Count()

	stdout, stderr, err := run(t, url, "replay", "--model", "b", "--into", "s1b", "default", "s1", runs[0])
	if err != nil {
		t.Fatalf("replay: %v\n%s\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"forked default/s1 before run " + runs[0][:8] + " into s1b (0 records, model b)", "\nbeta answers\n", "≠ model", "  user ", "first question", "≠ answer", "alpha", "$0.000012", "$0.000042", "10 in, 1 out", "10 in, 2 out", "rows differ"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("replay output lacks %q:\n%s", want, stdout)
		}
	}
	if srvB.Count() != askedB+1 || srvA.Count() != askedA {
		t.Errorf("model calls: a %d → %d, b %d → %d; want one call of b", askedA, srvA.Count(), askedB, srvB.Count())
	}
	fork := records("s1b")
	if len(fork) < 3 || fork[0].Kind != "forked" || fork[1].Kind != "user" || fork[len(fork)-1].Kind != "end" {
		t.Fatalf("s1b holds %+v, want the forked record, then a run", fork)
	}
	var forked struct {
		Model     string `json:"model"`
		BeforeRun string `json:"before_run"`
	}
	var final agentfleet.AssistantMessage
	json.Unmarshal(fork[0].Body, &forked)
	json.Unmarshal(fork[len(fork)-1].Body, &final)
	if forked.Model != "b" || forked.BeforeRun != runs[0] || final.Model != "b" || agentfleet.JoinText(final.Content) != "beta answers" {
		t.Errorf("forked record %+v, final %+v", forked, final)
	}
	if got := records("s1"); len(got) != len(src) {
		t.Errorf("the source changed: %d records, had %d", len(got), len(src))
	}
	// The replayed session goes on with model b.
	if stdout, _, err := run(t, url, "ask", "default", "s1b", "and then?"); err != nil || stdout != "beta answers\n" {
		t.Errorf("ask s1b: %q %v", stdout, err)
	}

	// diff, its other run found after the fork, as text and JSON.
	stdout, _, err = run(t, url, "diff", "default", "s1", runs[0], "s1b")
	if err != nil || !strings.Contains(stdout, "≠ model") || !strings.Contains(stdout, "beta answers") || !strings.Contains(stdout, "$0.000042") {
		t.Errorf("diff: %v\n%s", err, stdout)
	}
	stdout, _, err = run(t, url, "diff", "--json", "default", "s1", runs[0], "s1b", fork[1].RunID)
	var d rundiff.Diff
	if err != nil || json.Unmarshal([]byte(stdout), &d) != nil {
		t.Fatalf("diff --json: %v\n%s", err, stdout)
	}
	if d.A.Model != "a" || d.B.Model != "b" || d.A.Answer != "alpha" || d.B.Answer != "beta answers" || d.A.User != d.B.User ||
		d.A.Usage == nil || d.B.Usage == nil || d.A.Usage.OutputTokens != 1 || d.B.Usage.OutputTokens != 2 || d.A.Cost() != 0.000012 || d.B.Cost() != 0.000042 {
		t.Errorf("diff --json: %+v", d)
	}

	// With the agent's own model, as JSON: the same answer.
	stdout, _, err = run(t, url, "replay", "--json", "default", "s1", runs[0])
	var rep struct {
		Forked struct{ Agent, Source string }
		Answer agentfleet.AssistantMessage
		Diff   rundiff.Diff
	}
	if err != nil || json.Unmarshal([]byte(stdout), &rep) != nil {
		t.Fatalf("replay --json: %v\n%s", err, stdout)
	}
	if rep.Forked.Source != "s1" || !strings.HasPrefix(rep.Diff.B.Session, "s1-replay-") || rep.Diff.B.Answer != "alpha" || rep.Diff.Differs() != 0 {
		t.Errorf("replay --json: %+v", rep)
	}

	// The model from a profile file; the second run, after the first.
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.yaml"), filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("name: default\nmodel: b\n"), 0o600)
	os.WriteFile(bad, []byte("model: b\nsystem_prompt: you obey me\n"), 0o600)
	stdout, _, err = run(t, url, "replay", "--profile", good, "--into", "s2b", "default", "s1", runs[1])
	if err != nil || !strings.Contains(stdout, "into s2b (") || !strings.Contains(stdout, "model b)") || !strings.Contains(stdout, "second question") || !strings.Contains(stdout, "\nbeta answers\n") {
		t.Errorf("replay --profile: %v\n%s", err, stdout)
	}
	first := 0
	for _, r := range src {
		if r.RunID == runs[0] {
			first++
		}
	}
	if got := records("s2b"); len(got) < first+1 || got[first].Kind != "forked" {
		t.Errorf("s2b holds %+v, want the %d records of the first run, then the forked record", got, first)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "default", "s1", "nope"}, `session s1 has no run "nope"`},
		{[]string{"replay", "--model", "zzz", "--into", "s9", "default", "s1", runs[0]}, `agent "default" may not be forked onto model "zzz": the models a fork of it may choose are b`},
		{[]string{"replay", "--into", "s1b", "default", "s1", runs[0]}, "exists"},
		{[]string{"diff", "default", "s1", runs[0], "s1"}, "session s1: the session holds no forked record"},
		{[]string{"diff", "default", "s1", runs[0], "s1b", "nope"}, `session s1b has no run "nope"`},
	} {
		_, stderr, err := run(t, url, tc.args...)
		if err == nil || !strings.Contains(err.Error()+stderr, tc.want) {
			t.Errorf("%v: err %v, stderr %q; want %q", tc.args, err, stderr, tc.want)
		}
	}
	m := NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--nats-url", url, "replay", "--profile", bad, "default", "s1", runs[0]}); err == nil || !strings.Contains(err.Error(), "agentctl replay: --profile "+bad+": field system_prompt: a replay takes only model") {
		t.Errorf("replay --profile %s: %v", bad, err)
	}
	if got := records("s9"); len(got) != 0 {
		t.Errorf("the refused replay stored %+v", got)
	}
}

// TestReplayProfile decides what a replay takes of a profile file: its
// model, its name when it is the agent's; any other field, no model or
// another agent's name is refused.
func TestReplayProfile(t *testing.T) {
	for _, tc := range []struct{ data, model, err string }{
		{"model: b\n", "b", ""},
		{`{"name":"default","model":"b"}`, "b", ""},
		{"model: b\ntools: [\"*\"]\n", "", "field tools: a replay takes only model"},
		{"model: b\nfork_models: [c]\n", "", "field fork_models"},
		{"name: other\nmodel: b\n", "", "the profile is of agent other"},
		{"name: default\n", "", "no model"},
		{"model: 7\n", "", "no model"},
		{"- model: b\n", "", "not a YAML or JSON profile"},
		{"{bad", "", "not a YAML or JSON profile"},
	} {
		got, err := replayProfile([]byte(tc.data), "default")
		if got != tc.model || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: %q %v, want %q %q", tc.data, got, err, tc.model, tc.err)
		}
	}
}
