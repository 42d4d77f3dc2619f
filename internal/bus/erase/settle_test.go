package erase_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/erase"
)

// TestSettle: an orchestrator that lost the session without knowing yet
// (no member, so the stop does not wait for it) goes on publishing its
// events for a second after the delete began. With Settle past that
// second nothing of the session is left when the delete returns, and the
// answer counts the late events; without it (Settle 0), they stay.
func TestSettle(t *testing.T) {
	for _, tt := range []struct {
		name     string
		settle   time.Duration
		wantLeft bool
	}{
		{"settle past the deposed orchestrator's second", 2 * time.Second, false},
		{"no settle", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := openFleet(t)
			f.seed(t, "s1")
			d := &erase.Deleter{Subjects: f.subjects, JS: f.js, Objects: f.objects, Settle: tt.settle}
			// The deposed orchestrator: events of s1 for a second.
			deposed := make(chan int)
			go func() {
				n := 0
				for end := time.Now().Add(time.Second); time.Now().Before(end); n++ {
					f.nc.Publish(f.subjects.Event("default", "s1", "tool.update"), []byte(`{"type":"tool.update"}`))
					f.nc.Flush()
					time.Sleep(10 * time.Millisecond) // the pace of its publishes, not a wait for something
				}
				deposed <- n
			}()
			out, err := d.Delete(context.Background(), "default", "s1")
			if err != nil {
				t.Fatal(err)
			}
			published := <-deposed
			f.nc.Flush()
			held, objects := f.held(t, "s1")
			left := total(held)
			if tt.wantLeft {
				if left == 0 {
					t.Errorf("nothing left without a settle, though the deposed orchestrator published %d events for a second: the test shows nothing", published)
				}
				return
			}
			if left != 0 || objects != 0 {
				t.Errorf("left after the delete: %v, %d objects (the deposed orchestrator published %d events)", held, objects, published)
			}
			if out.Late["AGENT_EVENTS"] == 0 {
				t.Errorf("the answer counts no late event: %+v", out)
			}
		})
	}
}
