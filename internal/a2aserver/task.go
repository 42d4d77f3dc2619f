package a2aserver

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// Task is what the stored history of a session says of one A2A task.
type Task struct {
	*a2a.Task
	// RunID is the run that took the task's message ("" before it did).
	RunID string
	// Pending is the call of the run that waits for a decision, the
	// earliest when several do; nil when none does.
	Pending *agentfleet.ApprovalRequest
}

// TaskOf returns the task whose user message has the client message id
// key in a session's records, or false when no stored user message has
// it. Its state comes from the records of the run that took the message:
// the run's end record makes it completed, failed or canceled (by stop
// reason, see StateOf); a call waiting for a decision makes it
// input-required; otherwise it is working. The history holds the run's
// user message and the text of its assistant messages; a completed task
// has the final message as its artifact "answer".
func TaskOf(records []history.Record, session, key string) (*Task, bool) {
	runID := ""
	for _, r := range records {
		if u, ok := r.Message.(*agentfleet.UserMessage); ok && u.ID == key {
			runID = r.RunID
			break
		}
	}
	if runID == "" {
		return nil, false
	}
	t := &Task{RunID: runID, Task: &a2a.Task{ID: TaskID(session, key), ContextID: session}}
	var pending []*agentfleet.ApprovalRequest
	var final *agentfleet.AssistantMessage
	var last time.Time
	for _, r := range records {
		if r.RunID != runID {
			continue
		}
		switch {
		case r.Message != nil:
			if m := messageOf(r.Message, t.Task); m != nil {
				t.History = append(t.History, m)
			}
			if u, ok := r.Message.(*agentfleet.UserMessage); ok {
				last = u.Timestamp
			}
		case r.Approval != nil:
			pending = append(pending, r.Approval)
		case r.Decision != nil:
			for i, p := range pending {
				if p.ToolCallID == r.Decision.ToolCallID {
					pending = append(pending[:i], pending[i+1:]...)
					break
				}
			}
		case r.Final != nil:
			final = r.Final
		}
	}
	switch {
	case final != nil:
		t.Status = a2a.TaskStatus{State: StateOf(final.StopReason)}
		if !final.Timestamp.IsZero() {
			last = final.Timestamp
		}
		parts := Parts(final.Content)
		if t.Status.State == a2a.TaskStateCompleted {
			if len(parts) > 0 {
				t.Artifacts = []*a2a.Artifact{{ID: "answer", Name: "answer", Parts: parts}}
			}
			t.Status.Message = agentMessage(t.Task, parts)
		} else {
			msg := fmt.Sprintf("the run ended with stop reason %s", final.StopReason)
			if final.ErrorMessage != "" {
				msg += ": " + final.ErrorMessage
			}
			t.Status.Message = agentMessage(t.Task, append(parts, a2a.TextPart{Text: msg}))
		}
	case len(pending) > 0:
		t.Pending = pending[0]
		t.Status = a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: agentMessage(t.Task, approvalParts(t.Pending))}
	default:
		t.Status = a2a.TaskStatus{State: a2a.TaskStateWorking}
	}
	if !last.IsZero() {
		ts := last.UTC()
		t.Status.Timestamp = &ts
	}
	return t, true
}

// StateOf is the A2A state of a run that ended with stop reason r: stop
// and tool_use_terminated complete the task, aborted cancels it, every
// other (error, budget, max_turns, length) fails it.
func StateOf(r agentfleet.StopReason) a2a.TaskState {
	switch r {
	case agentfleet.StopReasonStop, agentfleet.StopReasonToolTerminated:
		return a2a.TaskStateCompleted
	case agentfleet.StopReasonAborted:
		return a2a.TaskStateCanceled
	}
	return a2a.TaskStateFailed
}

// approvalParts says which call waits and how to answer.
func approvalParts(p *agentfleet.ApprovalRequest) []a2a.Part {
	args, _ := json.Marshal(p.Arguments)
	text := fmt.Sprintf("tool call %s (%s) with arguments %s waits for approval until %s: answer this task with a message \"approve\" or \"reject <reason>\", or a data part {\"approve\": true|false, \"reason\": \"...\"}",
		p.ToolName, p.ToolCallID, clip(string(args)), p.Deadline.UTC().Format(time.RFC3339))
	data := map[string]any{"tool_call_id": p.ToolCallID, "tool_name": p.ToolName, "arguments": p.Arguments, "deadline": p.Deadline.UTC().Format(time.RFC3339)}
	return []a2a.Part{a2a.TextPart{Text: text}, a2a.DataPart{Data: data}}
}

func agentMessage(t *a2a.Task, parts []a2a.Part) *a2a.Message {
	m := a2a.NewMessageForTask(a2a.MessageRoleAgent, t, parts...)
	m.ID = string(t.ID) + "-status"
	return m
}

// messageOf is the A2A message of a stored user or assistant message with
// text; nil for tool results and assistant messages without text.
func messageOf(m agentfleet.Message, t *a2a.Task) *a2a.Message {
	var role a2a.MessageRole
	var content []agentfleet.Content
	id := ""
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		role, content, id = a2a.MessageRoleUser, m.Content, m.ID
	case *agentfleet.AssistantMessage:
		role = a2a.MessageRoleAgent
		for _, c := range m.Content {
			if c.Type == agentfleet.ContentText && c.Text != "" {
				content = append(content, c)
			}
		}
		id = fmt.Sprintf("%s-%d", t.ID, len(t.History))
	default:
		return nil
	}
	parts := Parts(content)
	if len(parts) == 0 {
		return nil
	}
	msg := a2a.NewMessageForTask(role, t, parts...)
	msg.ID = id
	return msg
}
