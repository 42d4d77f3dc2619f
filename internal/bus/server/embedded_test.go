package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEmbeddedSync: the embedded server syncs every write by default, takes
// a lazy interval when asked, and its Sync overrides a config file's
// sync_interval.
func TestEmbeddedSync(t *testing.T) {
	lazyConf := filepath.Join(t.TempDir(), "lazy.conf")
	if err := os.WriteFile(lazyConf, []byte("jetstream { sync_interval: 30s }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		cfg          EmbeddedConfig
		wantAlways   bool
		wantInterval time.Duration
	}{
		{name: "default", wantAlways: true, wantInterval: 2 * time.Minute},
		{name: "lazy", cfg: EmbeddedConfig{Sync: Sync{Interval: 2 * time.Minute}}, wantInterval: 2 * time.Minute},
		{name: "lazy short", cfg: EmbeddedConfig{Sync: Sync{Interval: time.Second}}, wantInterval: time.Second},
		{name: "over a lazy config file", cfg: EmbeddedConfig{ConfigFile: lazyConf}, wantAlways: true, wantInterval: 30 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Listen, cfg.DataDir = "127.0.0.1:-1", t.TempDir()
			s, err := RunEmbedded(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
			js := s.JetStreamConfig()
			if js == nil {
				t.Fatal("JetStream is off")
			}
			if js.SyncAlways != c.wantAlways || js.SyncInterval != c.wantInterval {
				t.Errorf("sync_always %v, sync_interval %v; want %v, %v", js.SyncAlways, js.SyncInterval, c.wantAlways, c.wantInterval)
			}
		})
	}
}
