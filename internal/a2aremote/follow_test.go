package a2aremote

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
)

// TestFollowStep: what a remote agent's stream may say, and what of it
// is refused.
func TestFollowStep(t *testing.T) {
	task := func(id string, st a2a.TaskState) a2a.Event {
		return &a2a.Task{ID: a2a.TaskID(id), ContextID: "c", Status: a2a.TaskStatus{State: st}}
	}
	update := func(id string, st a2a.TaskState, text string) a2a.Event {
		u := &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(id), ContextID: "c", Status: a2a.TaskStatus{State: st}}
		if text != "" {
			u.Status.Message = a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: text})
		}
		return u
	}
	for _, c := range []struct {
		name      string
		answering bool
		events    []a2a.Event
		state     a2a.TaskState
		done      bool
		err       string
	}{
		{"completed", false, []a2a.Event{task("t", a2a.TaskStateSubmitted), update("t", a2a.TaskStateWorking, "w"), update("t", a2a.TaskStateCompleted, "")}, a2a.TaskStateCompleted, true, ""},
		{"input required ends", false, []a2a.Event{task("t", a2a.TaskStateSubmitted), update("t", a2a.TaskStateInputRequired, "which?")}, a2a.TaskStateInputRequired, true, ""},
		{"answering: the first snapshot goes on", true, []a2a.Event{task("t", a2a.TaskStateInputRequired)}, a2a.TaskStateInputRequired, false, ""},
		{"direct message", false, []a2a.Event{a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "hi"})}, a2a.TaskStateCompleted, true, ""},
		{"bogus state", false, []a2a.Event{task("t", "exploded")}, "", false, `task state "exploded", which is not one of A2A's`},
		{"another task", false, []a2a.Event{task("t", a2a.TaskStateWorking), update("u", a2a.TaskStateCompleted, "")}, a2a.TaskStateWorking, false, `event of task "u" while following "t"`},
		{"no task id", false, []a2a.Event{update("", a2a.TaskStateWorking, "")}, "", false, "without a task id"},
		{"too many", false, []a2a.Event{task("t", a2a.TaskStateWorking), update("t", a2a.TaskStateWorking, ""), update("t", a2a.TaskStateWorking, "")}, a2a.TaskStateWorking, false, "more than 2 events"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &Follow{MaxEvents: 10, Answering: c.answering}
			if c.name == "too many" {
				f.MaxEvents = 2
			}
			var done bool
			var err error
			for _, e := range c.events {
				if _, done, err = f.Step(e); err != nil || done {
					break
				}
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if f.State != c.state || done != c.done {
				t.Errorf("state %s done %v, want %s %v", f.State, done, c.state, c.done)
			}
		})
	}
}
