package main

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/input"
)

// TestEventsStorageFlag parses --events-storage: memory by default, file when
// asked, and a clear error naming the flag for anything else.
func TestEventsStorageFlag(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want input.EventsStorage
		err  string
	}{
		{name: "default", want: input.EventsMemory},
		{name: "file", args: []string{"--events-storage", "file"}, want: input.EventsFile},
		{name: "garbage", args: []string{"--events-storage", "disk"}, err: `--events-storage "disk": want memory or file`},
		{name: "oversized", args: []string{"--events-storage", strings.Repeat("m", 5000)}, err: `…": want memory or file`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(strings.Builder)
			err := m.ParseFlags(c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%v: err = %v, want %q", c.args, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Streams.EventsStorage != c.want {
				t.Errorf("%v: events storage %q, want %q", c.args, m.Streams.EventsStorage, c.want)
			}
		})
	}
}
