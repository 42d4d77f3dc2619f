package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHistory asks twice in one session, then prints the session's
// records as stored, readable and as JSON.
func TestHistory(t *testing.T) {
	url := startFleet(t)
	for _, text := range []string{"echo first", "what is 6*7?"} {
		if _, stderr, err := run(t, url, "ask", "default", "h1", text); err != nil {
			t.Fatalf("ask %q: %v, stderr %s", text, err, stderr)
		}
	}
	stdout, stderr, err := run(t, url, "history", "--json", "default", "h1")
	if err != nil {
		t.Fatalf("history --json: %v, stderr %s", err, stderr)
	}
	var h historyJSON
	if err := json.Unmarshal([]byte(stdout), &h); err != nil {
		t.Fatalf("history --json printed %q: %v", stdout, err)
	}
	var kinds []string
	runs := map[string]bool{}
	for _, r := range h.Records {
		kinds = append(kinds, r.Kind)
		if r.Seq == 0 || r.RunID == "" || r.Writer == "" || r.Seq > h.LastSeq {
			t.Errorf("record %+v: want a sequence up to %d, a run and a writer", r, h.LastSeq)
		}
		runs[r.RunID] = true
	}
	if got, want := strings.Join(kinds, " "), "user assistant tool assistant end user assistant tool assistant end"; got != want || len(runs) != 2 {
		t.Errorf("kinds = %q in %d runs, want %q in 2", got, len(runs), want)
	}
	stdout, _, err = run(t, url, "history", "default", "h1")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != len(h.Records) || !strings.Contains(lines[0], "user      echo first") || !strings.Contains(stdout, "→ calculator") || !strings.Contains(stdout, "42") {
		t.Errorf("history printed:\n%s", stdout)
	}
	stdout, _, err = run(t, url, "history", "default", "never")
	if err != nil || stdout != "default/never has no stored record\n" {
		t.Errorf("history of a session never stored: %q, %v", stdout, err)
	}
	if _, _, err := run(t, url, "history", "nobody", "h1"); err == nil || !strings.Contains(err.Error(), `unknown agent "nobody"`) {
		t.Errorf("history of an unknown agent: %v", err)
	}
}
