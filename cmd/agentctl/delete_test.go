package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/erase"
)

// TestDelete asks two sessions, deletes one and reads its history: it
// holds nothing, the other keeps its records, the name takes input again
// as a new session, and a delete of a session that holds nothing answers
// zero counts.
func TestDelete(t *testing.T) {
	url := startFleet(t)
	for _, s := range []string{"d1", "d2"} {
		if _, stderr, err := run(t, url, "ask", "default", s, "echo private"); err != nil {
			t.Fatalf("ask %s: %v %s", s, err, stderr)
		}
	}
	records := func(session string) int {
		t.Helper()
		stdout, stderr, err := run(t, url, "history", "--json", "default", session)
		if err != nil {
			t.Fatalf("history %s: %v %s", session, err, stderr)
		}
		var out historyJSON
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("history --json: %v\n%s", err, stdout)
		}
		return len(out.Records)
	}
	kept := records("d2")
	stdout, stderr, err := run(t, url, "delete", "default", "d1")
	if err != nil || !strings.Contains(stdout, "deleted session d1 of default: messages AGENT_APPROVE 0, AGENT_EVENTS ") || !strings.Contains(stdout, "stopped on ") {
		t.Fatalf("delete: %v\n%s%s", err, stdout, stderr)
	}
	if n := records("d1"); n != 0 {
		t.Fatalf("d1 holds %d records after its delete", n)
	}
	if stdout, _, _ := run(t, url, "history", "default", "d1"); !strings.Contains(stdout, "has no stored record") {
		t.Errorf("history of the deleted d1: %q", stdout)
	}
	if n := records("d2"); n != kept {
		t.Fatalf("d2 holds %d records after the delete of d1, %d before", n, kept)
	}
	if stdout, _, err := run(t, url, "ask", "default", "d1", "echo anew"); err != nil || !strings.Contains(stdout, "anew") {
		t.Fatalf("ask d1 anew: %v %q", err, stdout)
	}
	if n := records("d1"); n == 0 {
		t.Fatal("the new d1 holds no records")
	}
	stdout, _, err = run(t, url, "delete", "--json", "default", "never")
	var d erase.Deleted
	if err != nil || json.Unmarshal([]byte(stdout), &d) != nil || d.Session != "never" || d.Objects != 0 {
		t.Fatalf("delete of a session that never was: %v %q", err, stdout)
	}
	for stream, n := range d.Messages {
		if n != 0 {
			t.Errorf("the delete of nothing removed %d messages of %s", n, stream)
		}
	}
}
