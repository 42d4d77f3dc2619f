package wire

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

func TestParseUserMessage(t *testing.T) {
	tests := []struct {
		name, payload, msgID string
		wantText, wantID     string
		wantImages           int
		wantErr              string
	}{
		{name: "plain text", payload: "what time is it?", wantText: "what time is it?"},
		{name: "JSON string is text", payload: `"quoted"`, wantText: `"quoted"`},
		{name: "content string", payload: `{"content":"hi","id":"m1"}`, wantText: "hi", wantID: "m1"},
		{name: "header id", payload: `{"content":"hi"}`, msgID: "h1", wantText: "hi", wantID: "h1"},
		{name: "payload id wins", payload: `{"content":"hi","id":"p"}`, msgID: "h", wantText: "hi", wantID: "p"},
		{name: "blocks", payload: `{"content":[{"type":"text","text":"look"},{"type":"image","data":"aGk=","mime_type":"image/png"}]}`, wantText: "look", wantImages: 1},
		{name: "priority", payload: `{"content":"hi","priority":"interactive"}`, wantText: "hi"},
		{name: "bad priority", payload: `{"content":"hi","priority":"urgent!"}`, wantErr: `priority "urgent!" is not interactive or batch`},
		{name: "priority not a string", payload: `{"content":"hi","priority":1}`, wantErr: "payload is not a valid message object"},
		{name: "empty", payload: "  ", wantErr: "payload is empty"},
		{name: "invalid UTF-8", payload: "\xff\xfe", wantErr: "not valid UTF-8"},
		{name: "broken JSON", payload: `{"content":`, wantErr: "payload is not a valid message object"},
		{name: "unknown field", payload: `{"content":"x","role":"system"}`, wantErr: `unknown field "role"`},
		{name: "trailing data", payload: `{"content":"x"} {"content":"y"}`, wantErr: "data after its JSON object"},
		{name: "no content", payload: `{"id":"x"}`, wantErr: `payload has no "content"`},
		{name: "empty content", payload: `{"content":""}`, wantErr: "content is an empty string"},
		{name: "number content", payload: `{"content":1}`, wantErr: "content must be a string or an array"},
		{name: "empty blocks", payload: `{"content":[]}`, wantErr: "content is an empty array"},
		{name: "ref block", payload: `{"content":[{"type":"ref","$ref":"obj://agentfleet_objects/default/other/x","size":1,"sha256":"` + strings.Repeat("a", 64) + `","mime_type":"text/plain"}]}`, wantErr: "content[0]: a ref block comes from a tool, not from a user message"},
		{name: "bad block", payload: `{"content":[{"type":"text","text":"a"},{"type":"image","data":"aGk="}]}`, wantErr: "content[1]: image block: mime_type is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseUserMessage([]byte(tt.payload), tt.msgID)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := agentfleet.JoinText(m.Content); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			if m.ID != tt.wantID || m.Role != agentfleet.RoleUser || m.Timestamp.IsZero() {
				t.Errorf("message = %+v", m)
			}
			images := 0
			for _, c := range m.Content {
				if c.Type == agentfleet.ContentImage {
					images++
				}
			}
			if images != tt.wantImages {
				t.Errorf("images = %d, want %d", images, tt.wantImages)
			}
		})
	}
}

func TestParseAbort(t *testing.T) {
	for payload, want := range map[string]string{"": "", `{"reason":"stop now"}`: "stop now", "plain reason": "plain reason"} {
		if got, err := ParseAbort([]byte(payload)); err != nil || got != want {
			t.Errorf("ParseAbort(%q) = %q, %v; want %q", payload, got, err, want)
		}
	}
	if _, err := ParseAbort([]byte(`{"reason":`)); err == nil {
		t.Error("broken abort JSON accepted")
	}
}

func FuzzParseUserMessage(f *testing.F) {
	for _, s := range []string{"hi", `{"content":"x"}`, `{"content":[{"type":"image","data":"aGk=","mime_type":"image/png"}]}`, `{"content":[{}]}`, "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseUserMessage(data, "")
		if err != nil {
			return
		}
		if len(m.Content) == 0 {
			t.Fatal("accepted a message with no content")
		}
		for _, c := range m.Content {
			if err := c.Validate(); err != nil {
				t.Fatalf("accepted an invalid block: %v", err)
			}
		}
	})
}

func FuzzParseAbort(f *testing.F) {
	for _, s := range []string{"", `{"reason":"x"}`, "plain", `{"reason":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseAbort(data)
	})
}

func TestParseUserMessagePriority(t *testing.T) {
	m, err := ParseUserMessage([]byte(`{"content":"hi","priority":"batch"}`), "")
	if err != nil || m.Priority != "batch" {
		t.Fatalf("priority %q, err %v", m.Priority, err)
	}
}
