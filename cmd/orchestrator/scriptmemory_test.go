package main

import (
	"strings"
	"testing"
)

// TestScriptMemoryTotalFlag: a --script-memory-total smaller than one
// scripted call's budget fails the start and says why; a larger one is
// taken.
func TestScriptMemoryTotalFlag(t *testing.T) {
	m := NewMain()
	m.Stderr = new(strings.Builder)
	err := m.ParseFlags([]string{"--script-memory-total", "1000"})
	if want := "--script-memory-total 1000: must be at least the 67108864 bytes of one scripted call's budget"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	m = NewMain()
	m.Stderr = new(strings.Builder)
	if err := m.ParseFlags([]string{"--script-memory-total", "536870912"}); err != nil || m.ScriptMemoryTotal != 512<<20 {
		t.Errorf("--script-memory-total 512 MiB: %v, total %d", err, m.ScriptMemoryTotal)
	}
}
