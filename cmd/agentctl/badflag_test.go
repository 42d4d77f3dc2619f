package main

import (
	"strings"
	"testing"
)

// TestBadFlagIsOneLine gives agentctl a flag it does not have: the error is one
// line that names the flag and points at --help, and nothing else is
// printed (the full usage would bury it).
func TestBadFlagIsOneLine(t *testing.T) {
	m := NewMain()
	var stderr strings.Builder
	m.Stderr = &stderr
	err := m.ParseFlags([]string{"ask", "--nosuch", "default", "s", "hi"})
	if err == nil || !strings.Contains(err.Error(), "-nosuch") || !strings.Contains(err.Error(), "--help lists the flags") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line naming -nosuch and pointing at --help", err)
	}
	if stderr.Len() != 0 {
		t.Errorf("printed %d lines: %q, want nothing", strings.Count(stderr.String(), "\n"), stderr.String())
	}
}
