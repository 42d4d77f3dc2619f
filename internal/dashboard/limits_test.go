package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/dashboard"
)

// TestReplayBounds: a replay stops at --dashboard-max-replay-bytes with a
// notice that says so, and the page goes on with the live events; a since
// further back than --dashboard-max-replay is clipped to it with a notice.
func TestReplayBounds(t *testing.T) {
	f := startFleet(t, dashboard.Options{ReadOnly: true})
	const stored = 300
	publishNumbered(t, f.nc, "s", 1, stored)
	waitHandedOut(t, f.url, stored)

	subjects, _ := bus.NewSubjects("")
	d, err := dashboard.Open(context.Background(), bustest.MustConnect(t, f.srv), subjects, dashboard.Options{ReadOnly: true,
		Config: dashboard.Config{Limits: dashboard.Limits{MaxReplay: time.Hour, MaxReplayBytes: 8000}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(d)
	t.Cleanup(func() {
		d.Close()
		hs.Close()
	})

	ch := openEvents(t, hs.URL, "?since=48h", "")
	if e := next(t, ch); e.name != "hello" {
		t.Fatalf("first event %+v, want hello", e)
	}
	if e := next(t, ch); e.name != "notice" || !strings.Contains(e.data, "clipped to the last 1h0m0s (--dashboard-max-replay)") || !strings.Contains(e.data, "48h") {
		t.Fatalf("second event %+v, want the notice of the clipped range", e)
	}
	replayed, bytes := 0, 0
	for {
		e := next(t, ch)
		if e.name == "notice" {
			if !strings.Contains(e.data, "--dashboard-max-replay-bytes") || !strings.Contains(e.data, "8000 bytes") {
				t.Fatalf("notice %q, want the replay bound named", e.data)
			}
			break
		}
		if e.name == "replayed" {
			t.Fatalf("the replay of %d events (%d bytes) ended without reaching its bound of 8000 bytes", replayed, bytes)
		}
		if e.name == "" {
			replayed++
			bytes += len(e.data)
		}
	}
	t.Logf("the replay stopped after %d of %d events, %d bytes", replayed, stored, bytes)
	if replayed == 0 || replayed >= stored || bytes > 8000 {
		t.Errorf("replayed %d events of %d bytes, want some but not all, within 8000 bytes", replayed, bytes)
	}
	if e := next(t, ch); e.name != "replayed" {
		t.Fatalf("after the notice %+v, want replayed", e)
	}
	// Live events go on.
	publishNumbered(t, f.nc, "s", stored+1, stored+1)
	for {
		e := next(t, ch)
		var ev agentfleet.Event
		if e.name == "" && json.Unmarshal([]byte(e.data), &ev) == nil && ev.Agent == "gap" {
			if ev.Turn != stored+1 {
				t.Fatalf("the first live event is number %d, want %d", ev.Turn, stored+1)
			}
			break
		}
	}
}
