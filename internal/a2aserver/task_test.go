package a2aserver

import (
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// TestTaskOf: the state of a task is what the stored records of its run
// say, and only its run's: not stored, working, input-required until the
// call's decision, completed with the answer as artifact, failed and
// canceled by stop reason.
func TestTaskOf(t *testing.T) {
	const key = "a2a-0123456789abcdef0123456789abcdef"
	user := func(id string) agentfleet.Message {
		return &agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: []agentfleet.Content{agentfleet.Text("hi")}, ID: id}
	}
	approval := &agentfleet.ApprovalRequest{ToolCallID: "c1", ToolName: "echo", Deadline: time.Unix(0, 0)}
	final := func(r agentfleet.StopReason) *agentfleet.AssistantMessage {
		return &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("done")}, StopReason: r, ErrorMessage: "why"}
	}
	other := []history.Record{{RunID: "r0", Message: user("x")}, {RunID: "r0", Approval: approval}}
	for _, c := range []struct {
		name    string
		records []history.Record
		found   bool
		state   a2a.TaskState
		text    string
	}{
		{"not stored", other, false, "", ""},
		{"working", append(other, history.Record{RunID: "r1", Message: user(key)}), true, a2a.TaskStateWorking, ""},
		{"waits for approval", append(other, history.Record{RunID: "r1", Message: user(key)}, history.Record{RunID: "r1", Approval: approval}), true, a2a.TaskStateInputRequired, "tool call echo (c1)"},
		{"decided", append(other, history.Record{RunID: "r1", Message: user(key)}, history.Record{RunID: "r1", Approval: approval},
			history.Record{RunID: "r1", Decision: &agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true}}), true, a2a.TaskStateWorking, ""},
		{"completed", append(other, history.Record{RunID: "r1", Message: user(key)}, history.Record{RunID: "r1", Final: final(agentfleet.StopReasonStop)}), true, a2a.TaskStateCompleted, "done"},
		{"failed", append(other, history.Record{RunID: "r1", Message: user(key)}, history.Record{RunID: "r1", Final: final(agentfleet.StopReasonBudget)}), true, a2a.TaskStateFailed, "stop reason budget: why"},
		{"canceled", append(other, history.Record{RunID: "r1", Message: user(key)}, history.Record{RunID: "r1", Final: final(agentfleet.StopReasonAborted)}), true, a2a.TaskStateCanceled, "stop reason aborted"},
	} {
		t.Run(c.name, func(t *testing.T) {
			task, found := TaskOf(c.records, "s1", key)
			if found != c.found {
				t.Fatalf("found = %v, want %v", found, c.found)
			}
			if !found {
				return
			}
			if got, want := task.Status.State, c.state; got != want {
				t.Errorf("state = %s, want %s", got, want)
			}
			if task.ID != "s1."+key || task.ContextID != "s1" || task.RunID != "r1" {
				t.Errorf("task = %s in %s, run %s", task.ID, task.ContextID, task.RunID)
			}
			text := ""
			if task.Status.Message != nil {
				text = textOf(task.Status.Message.Parts)
			}
			if !strings.Contains(text, c.text) {
				t.Errorf("status message = %q, want %q in it", text, c.text)
			}
			if c.state == a2a.TaskStateCompleted && (len(task.Artifacts) != 1 || textOf(task.Artifacts[0].Parts) != "done") {
				t.Errorf("artifacts = %+v", task.Artifacts)
			}
		})
	}
}

func textOf(parts []a2a.Part) string {
	var out []string
	for _, p := range parts {
		if tp, ok := p.(a2a.TextPart); ok {
			out = append(out, tp.Text)
		}
	}
	return strings.Join(out, "\n")
}

// TestParseTaskID: a task id names its session and message key, and
// anything else is refused with what is wrong.
func TestParseTaskID(t *testing.T) {
	key := MessageKey("default", "s1", "m1")
	if s, k, err := ParseTaskID(TaskID("s1", key)); err != nil || s != "s1" || k != key {
		t.Errorf("round trip = %s %s %v", s, k, err)
	}
	if MessageKey("default", "s1", "m1") == MessageKey("default", "s2", "m1") {
		t.Error("the same message id in two sessions has one key")
	}
	for _, c := range []struct{ id, want string }{
		{"nodot", "not one of this server's"},
		{".a2a-0123456789abcdef0123456789abcdef", "session name is empty"},
		{"a b.a2a-0123456789abcdef0123456789abcdef", "may hold only"},
		{"s1.a2a-0123", "not one of this server's"},
		{"s1.a2a-0123456789abcdef0123456789abcdeg", "not one of this server's"},
		{"s1.js-12", "not one of this server's"},
	} {
		if _, _, err := ParseTaskID(a2a.TaskID(c.id)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTaskID(%q) = %v, want %q", c.id, err, c.want)
		}
	}
}

// TestDecision: the message that answers input-required is read as a
// decision, or refused saying what to send.
func TestDecision(t *testing.T) {
	for _, c := range []struct {
		name    string
		parts   []a2a.Part
		approve bool
		reason  string
		err     string
	}{
		{"approve", []a2a.Part{a2a.TextPart{Text: "Approve."}}, true, "", ""},
		{"reject with reason", []a2a.Part{a2a.TextPart{Text: "reject too risky"}}, false, "too risky", ""},
		{"data", []a2a.Part{a2a.DataPart{Data: map[string]any{"approve": true, "reason": "fine"}}}, true, "fine", ""},
		{"data without approve", []a2a.Part{a2a.DataPart{Data: map[string]any{"approve": "yes"}}}, false, "", `no boolean "approve"`},
		{"chatter", []a2a.Part{a2a.TextPart{Text: "maybe later"}}, false, "", "is no decision"},
		{"nothing", nil, false, "", "holds no decision"},
	} {
		t.Run(c.name, func(t *testing.T) {
			approve, reason, err := Decision(c.parts)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || approve != c.approve || reason != c.reason {
				t.Errorf("= %v %q %v, want %v %q", approve, reason, err, c.approve, c.reason)
			}
		})
	}
}

// TestContent: what of a message the fleet takes, and what it refuses.
func TestContent(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []a2a.Part
		err   string
	}{
		{"text and data", []a2a.Part{a2a.TextPart{Text: "hi"}, a2a.DataPart{Data: map[string]any{"a": 1.0}}}, ""},
		{"image", []a2a.Part{a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{MimeType: "image/png"}, Bytes: "UE5H"}}}, ""},
		{"file by URI", []a2a.Part{a2a.FilePart{File: a2a.FileURI{URI: "file:///etc/passwd"}}}, "part 0: a file by URI is not fetched"},
		{"pdf", []a2a.Part{a2a.TextPart{Text: "x"}, a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{MimeType: "application/pdf"}, Bytes: "UE5H"}}}, `part 1: file of type "application/pdf"`},
		{"bad base64", []a2a.Part{a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{MimeType: "image/png"}, Bytes: "!!"}}}, "not base64"},
		{"empty", []a2a.Part{a2a.TextPart{Text: "  "}}, "no content"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Content(c.parts)
			if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
				t.Errorf("err = %v, want %q", err, c.err)
			}
		})
	}
}
