package main

import (
	"strings"
	"testing"
	"time"
)

// TestSyncFlag: the embedded server syncs every write before it
// acknowledges it unless --sync names an interval, which is taken with a
// warning of what a power cut loses; a bad --sync fails the start and says
// what was wrong; --sync beside --nats-url warns that it does not apply.
func TestSyncFlag(t *testing.T) {
	for _, c := range []struct {
		name, sync, err string
	}{
		{name: "garbage", sync: "sometimes", err: `--sync "sometimes": want "always" or a duration such as 2m`},
		{name: "zero", sync: "0s", err: `--sync "0s": a duration must be positive`},
		{name: "oversized", sync: strings.Repeat("7", 300) + "m", err: `want "always" or a duration`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(strings.Builder)
			if err := m.ParseFlags([]string{"--sync", c.sync}); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--sync %q: err = %v, want %q", c.sync, err, c.err)
			}
		})
	}
	t.Run("default always", func(t *testing.T) {
		m := run(t)
		if js := m.embedded.JetStreamConfig(); !js.SyncAlways {
			t.Errorf("embedded server: sync_always false (interval %v), want true", js.SyncInterval)
		}
		if log := m.Stderr.(*strings.Builder).String(); strings.Contains(log, "syncs its store lazily") {
			t.Errorf("a lazy-sync warning with the default:\n%s", log)
		}
	})
	t.Run("lazy", func(t *testing.T) {
		m := run(t, "--sync", "2m")
		if js := m.embedded.JetStreamConfig(); js.SyncAlways || js.SyncInterval != 2*time.Minute {
			t.Errorf("embedded server: sync_always %v, interval %v; want false, 2m", js.SyncAlways, js.SyncInterval)
		}
		if log := m.Stderr.(*strings.Builder).String(); !strings.Contains(log, "syncs its store lazily") {
			t.Errorf("no lazy-sync warning:\n%s", log)
		}
	})
	t.Run("with an external server", func(t *testing.T) {
		m := NewMain()
		logs := new(strings.Builder)
		m.Stderr = logs
		if err := m.ParseFlags([]string{"--nats-url", "nats://127.0.0.1:1", "--sync", "always"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(logs.String(), "--sync applies to the embedded server only") {
			t.Errorf("no warning that --sync does not apply:\n%s", logs)
		}
	})
}
