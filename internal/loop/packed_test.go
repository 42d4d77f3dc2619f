package loop_test

import (
	"context"
	"encoding/json"
	"math"
	"sync"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// TestIdleSessionIsPacked checks that an idle session keeps its history
// packed, that a reader of it sees the messages the run stored, leaving it
// packed, and that the next run sees the whole history, in order.
func TestIdleSessionIsPacked(t *testing.T) {
	m := &script{steps: []step{use(`get {"key":"<a & b>"}`), say("a"), use(`get {}`), say("b")}}
	var mu sync.Mutex
	var stored []agentfleet.Message
	s, _ := newSession(t, m, loop.Config{Store: storeFuncs{append: func(_ string, msg agentfleet.Message) error {
		mu.Lock()
		defer mu.Unlock()
		stored = append(stored, msg)
		return nil
	}}}, tool("get", false, text("value")))
	wait(t, s.Send(agentfleet.NewUserMessage("one")))
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.Packed() {
		t.Fatal("a session idle after a run does not keep its history packed")
	}
	mu.Lock()
	want := jsonOf(t, stored)
	mu.Unlock()
	if got := jsonOf(t, s.History()); got != want {
		t.Errorf("history of the packed session:\n%s\nwant what the run stored:\n%s", got, want)
	}
	if !s.Packed() {
		t.Error("reading the history of an idle session unpacked it")
	}
	wait(t, s.Send(agentfleet.NewUserMessage("two")))
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := roles(m.request(2).Messages), "user:one assistant tool:get assistant user:two"; got != want {
		t.Errorf("the second run saw %s, want %s", got, want)
	}
	if got, want := jsonOf(t, m.request(2).Messages[:4]), want; got != want {
		t.Errorf("the second run saw the first run's messages as\n%s\nwant\n%s", got, want)
	}
	if got, want := roles(s.History()), "user:one assistant tool:get assistant user:two assistant tool:get assistant"; got != want {
		t.Errorf("history after the second run = %s, want %s", got, want)
	}
}

// TestPackedHistoryReadWhileRunning reads the history of a session while
// runs unpack and pack it again: every read sees whole messages in order
// (run with -race).
func TestPackedHistoryReadWhileRunning(t *testing.T) {
	var steps []step
	for range 20 {
		steps = append(steps, use(`get {}`), say("ok"))
	}
	m := &script{steps: steps}
	s, _ := newSession(t, m, loop.Config{}, tool("get", false, text("value")))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			h := s.History()
			for i, msg := range h {
				if want := []string{agentfleet.RoleUser, agentfleet.RoleAssistant, agentfleet.RoleTool, agentfleet.RoleAssistant}[i%4]; msg.MessageRole() != want {
					t.Errorf("message %d of a history read during runs is a %s, want %s", i, msg.MessageRole(), want)
					return
				}
			}
		}
	}()
	for i := range 20 {
		wait(t, s.Send(agentfleet.NewUserMessage("n")))
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got, want := len(s.History()), 4*(i+1); got != want {
			t.Fatalf("after run %d the history has %d messages, want %d", i+1, got, want)
		}
	}
	close(done)
	wg.Wait()
}

func jsonOf(t *testing.T, ms []agentfleet.Message) string {
	t.Helper()
	b, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPackMessage packs one message and back, refuses one whose details
// have no JSON encoding (its holder keeps it as it is), and refuses bytes
// that hold no message or two.
func TestPackMessage(t *testing.T) {
	final := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("done")},
		StopReason: agentfleet.StopReasonStop, RunID: "r1", Usage: &agentfleet.Usage{InputTokens: 3}}
	b, err := loop.PackMessage("r1", final)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loop.UnpackMessage(b)
	if err != nil {
		t.Fatal(err)
	}
	if a, want := jsonOf(t, []agentfleet.Message{got}), jsonOf(t, []agentfleet.Message{final}); a != want {
		t.Errorf("unpacked %s, want %s", a, want)
	}
	bad := &agentfleet.ToolResultMessage{Details: map[string]any{"x": math.Inf(1)}}
	if _, err := loop.PackMessage("r1", bad); err == nil {
		t.Error("a message whose details have no JSON encoding was packed")
	}
	if _, err := loop.UnpackMessage(nil); err == nil {
		t.Error("no bytes unpacked as a message")
	}
	if _, err := loop.UnpackMessage(append(append([]byte(nil), b...), b...)); err == nil {
		t.Error("two messages unpacked as one")
	}
}

// TestLongHistoryStaysUnpacked runs a session past the histories that are
// packed: it is compacted without being packed, and reads whole.
func TestLongHistoryStaysUnpacked(t *testing.T) {
	var steps []step
	for range 9 {
		steps = append(steps, use(`get {}`), say("ok"))
	}
	s, _ := newSession(t, &script{steps: steps}, loop.Config{}, tool("get", false, text("value")))
	for range 9 {
		wait(t, s.Send(agentfleet.NewUserMessage("n")))
		if err := s.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if s.Packed() || !s.Compacted() {
		t.Errorf("a session of 36 messages: packed %v, compacted %v; want false, true", s.Packed(), s.Compacted())
	}
	if got := len(s.History()); got != 36 {
		t.Errorf("history has %d messages, want 36", got)
	}
}
