package a2aremote

import (
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
)

// Follow is what a remote agent's stream has said of its task so far: a
// fold over the events, Step by Step, that trusts nothing of the peer.
type Follow struct {
	TaskID    a2a.TaskID
	ContextID string
	State     a2a.TaskState
	// Status is the text of the last status message; Answer the text of
	// the artifacts, or of a message that answered directly.
	Status, Answer string
	// Events counts the events taken.
	Events int
	// Answering is set when the message answers a task that asked for
	// input: the task's first snapshot, still input-required, does not
	// end the stream.
	Answering bool
	// MaxEvents and MaxText bound the events taken and the text kept;
	// Step fails past the first and clips past the second.
	MaxEvents, MaxText int
}

// states are the task states of A2A 0.3.
var states = map[a2a.TaskState]bool{
	a2a.TaskStateSubmitted: true, a2a.TaskStateWorking: true, a2a.TaskStateInputRequired: true, a2a.TaskStateAuthRequired: true,
	a2a.TaskStateCompleted: true, a2a.TaskStateFailed: true, a2a.TaskStateCanceled: true, a2a.TaskStateRejected: true,
}

// Step takes one event of the stream. It returns the progress to report
// (nil for none) and whether the stream is done: the task terminal or
// waiting for input, or a direct message. An event of another task, a
// state that is not A2A's, or one event past MaxEvents is an error.
func (f *Follow) Step(ev a2a.Event) (progress map[string]any, done bool, err error) {
	f.Events++
	if f.MaxEvents > 0 && f.Events > f.MaxEvents {
		return nil, false, fmt.Errorf("the remote agent sent more than %d events for one task", f.MaxEvents)
	}
	switch ev := ev.(type) {
	case *a2a.Message:
		f.Answer = f.clip(f.Answer + partsText(ev.Parts))
		f.State = a2a.TaskStateCompleted
		return nil, true, nil
	case *a2a.Task:
		if err := f.own(ev.ID, ev.ContextID); err != nil {
			return nil, false, err
		}
		if err := f.setState(ev.Status); err != nil {
			return nil, false, err
		}
		for _, a := range ev.Artifacts {
			f.Answer = f.clip(f.Answer + partsText(a.Parts))
		}
		if f.Answering && f.Events == 1 && f.State == a2a.TaskStateInputRequired {
			return nil, false, nil
		}
	case *a2a.TaskStatusUpdateEvent:
		if err := f.own(ev.TaskID, ev.ContextID); err != nil {
			return nil, false, err
		}
		if err := f.setState(ev.Status); err != nil {
			return nil, false, err
		}
		progress = map[string]any{"a2a_state": string(f.State), "task_id": string(f.TaskID)}
		if f.Status != "" {
			progress["text"] = f.Status
		}
	case *a2a.TaskArtifactUpdateEvent:
		if err := f.own(ev.TaskID, ev.ContextID); err != nil {
			return nil, false, err
		}
		if ev.Artifact != nil {
			f.Answer = f.clip(f.Answer + partsText(ev.Artifact.Parts))
		}
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("the remote agent sent an event of kind %T", ev)
	}
	return progress, f.State.Terminal() || f.State == a2a.TaskStateInputRequired || f.State == a2a.TaskStateAuthRequired, nil
}

// own checks that an event is of the task followed, and learns its ids
// from the first.
func (f *Follow) own(id a2a.TaskID, ctx string) error {
	if id == "" {
		return fmt.Errorf("the remote agent sent an event without a task id")
	}
	if f.TaskID == "" {
		f.TaskID, f.ContextID = id, ctx
		return nil
	}
	if id != f.TaskID {
		return fmt.Errorf("the remote agent sent an event of task %q while following %q", clip(string(id), 80), f.TaskID)
	}
	return nil
}

func (f *Follow) setState(st a2a.TaskStatus) error {
	if !states[st.State] {
		return fmt.Errorf("the remote agent sent task state %q, which is not one of A2A's", clip(string(st.State), 80))
	}
	if f.State.Terminal() && st.State != f.State {
		return fmt.Errorf("the remote agent moved task %s from %s to %s: a terminal state is final", f.TaskID, f.State, st.State)
	}
	f.State = st.State
	f.Status = ""
	if st.Message != nil {
		f.Status = f.clip(partsText(st.Message.Parts))
	}
	return nil
}

func (f *Follow) clip(s string) string {
	if f.MaxText > 0 && len(s) > f.MaxText {
		return s[:f.MaxText] + "…"
	}
	return s
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// partsText is the text of parts: text parts as they are, data parts
// and files named.
func partsText(parts []a2a.Part) string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, p.Text)
		case a2a.DataPart:
			out = append(out, fmt.Sprintf("%v", p.Data))
		case a2a.FilePart:
			out = append(out, "[a file]")
		}
	}
	return strings.Join(out, "\n")
}
