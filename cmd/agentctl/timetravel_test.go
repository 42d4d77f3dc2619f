package main

import (
	"encoding/json"

	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/client"
)

// TestHistoryAndFork asks a session twice, lists its records, forks it
// before its second run, and asks the fork: the fork holds the first run
// and a forked record, takes input like any session, and the source keeps
// its records. Forking into a session that exists is refused, and bad
// arguments are refused before anything is sent.
func TestHistoryAndFork(t *testing.T) {
	url := startFleet(t)
	for _, text := range []string{"echo one", "echo two"} {
		if _, stderr, err := run(t, url, "ask", "default", "s1", text); err != nil {
			t.Fatalf("ask: %v %s", err, stderr)
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
		if r.Writer == "" || r.Seq == 0 {
			t.Fatalf("record without writer or sequence: %+v", r)
		}
		if len(runs) == 0 || runs[len(runs)-1] != r.RunID {
			runs = append(runs, r.RunID)
		}
	}
	if len(runs) != 2 || src[0].Kind != "user" || src[len(src)-1].Kind != "end" {
		t.Fatalf("history of s1: runs %v, records %+v", runs, src)
	}
	stdout, _, err := run(t, url, "history", "default", "s1")
	if err != nil || !strings.Contains(stdout, "echo two") || !strings.Contains(stdout, "run "+runs[1][:8]) {
		t.Fatalf("history: %v\n%s", err, stdout)
	}

	stdout, stderr, err := run(t, url, "fork", "--before-run", runs[1], "default", "s1", "s2")
	if err != nil || !strings.Contains(stdout, "forked s1 of default into s2") {
		t.Fatalf("fork: %v %s %s", err, stdout, stderr)
	}
	fork := records("s2")
	first := 0
	for _, r := range src {
		if r.RunID == runs[0] {
			first++
		}
	}
	if len(fork) != first+1 || fork[first].Kind != "forked" {
		t.Fatalf("fork holds %+v, want the %d records of %s and a forked record", fork, first, runs[0])
	}
	if stdout, stderr, err := run(t, url, "ask", "default", "s2", "echo three"); err != nil || stdout != "echo: three\n" {
		t.Fatalf("ask the fork: %q %v %s", stdout, err, stderr)
	}
	if got := records("s2"); len(got) <= first+1 || got[len(got)-1].Kind != "end" {
		t.Fatalf("the fork after an ask: %+v", got)
	}
	if got := records("s1"); len(got) != len(src) {
		t.Fatalf("the source changed: %d records, had %d", len(got), len(src))
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fork", "default", "s1", "s2"}, "exists"},
		{[]string{"fork", "--at", "99999", "default", "s1", "s9"}, "no stored message 99999"},
	} {
		_, stderr, err := run(t, url, tc.args...)
		if err == nil || !strings.Contains(err.Error()+stderr, tc.want) {
			t.Errorf("%v: err %v, stderr %q; want %q", tc.args, err, stderr, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fork", "--at", "1", "--before-run", "x", "default", "s1", "s9"}, "agentctl fork: give --at or --before-run, not both"},
		{[]string{"fork", "default", "s1"}, "agentctl fork: want <agent> <session> <new-session>, got 2 argument(s)"},
		{[]string{"fork", "default", "s1", "bad.name"}, `agentctl fork: new session name "bad.name" may hold only`},
		{[]string{"fork", "--at", "-3", "default", "s1", "s9"}, `invalid value "-3" for flag -at`},
		{[]string{"history", "--at", "3", "default", "s1"}, "agentctl history: flag provided but not defined: -at"},
		{[]string{"history", "default"}, "agentctl history: want <agent> <session>, got 1 argument(s)"},
	} {
		m := NewMain()
		m.Stderr = new(strings.Builder)
		if err := m.ParseFlags(append([]string{"--nats-url", url}, tc.args...)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
