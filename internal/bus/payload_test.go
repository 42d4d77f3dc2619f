package bus

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
		{name: "empty", payload: "  ", wantErr: "payload is empty"},
		{name: "invalid UTF-8", payload: "\xff\xfe", wantErr: "not valid UTF-8"},
		{name: "broken JSON", payload: `{"content":`, wantErr: "payload is not a valid message object"},
		{name: "unknown field", payload: `{"content":"x","role":"system"}`, wantErr: `unknown field "role"`},
		{name: "trailing data", payload: `{"content":"x"} {"content":"y"}`, wantErr: "data after its JSON object"},
		{name: "no content", payload: `{"id":"x"}`, wantErr: `payload has no "content"`},
		{name: "empty content", payload: `{"content":""}`, wantErr: "content is an empty string"},
		{name: "number content", payload: `{"content":1}`, wantErr: "content must be a string or an array"},
		{name: "empty blocks", payload: `{"content":[]}`, wantErr: "content is an empty array"},
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

func TestSubjects(t *testing.T) {
	s, err := NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Event("default", "demo", "tool.end"), "agent.events.default.demo.tool.end"; got != want {
		t.Errorf("event subject = %s, want %s", got, want)
	}
	kind, agent, session, err := s.ParseClient("agent.ask.default.demo-1_x")
	if err != nil || kind != KindAsk || agent != "default" || session != "demo-1_x" {
		t.Errorf("ParseClient = %s %s %s %v", kind, agent, session, err)
	}
	for subject, want := range map[string]string{
		"agent.in.default":         "want agent.<kind>.<agent>.<session>",
		"agent.in.de fault.x":      `agent name "de fault"`,
		"agent.in.default.a@b":     `session name "a@b" may hold only`,
		"other.in.default.s":       `is not under prefix "agent"`,
		"agent.in.default.s.extra": "want agent.<kind>.<agent>.<session>",
	} {
		if _, _, _, err := s.ParseClient(subject); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseClient(%q) = %v, want %q", subject, err, want)
		}
	}
	if _, err := NewSubjects("acme.agent"); err != nil {
		t.Errorf("two-token prefix: %v", err)
	}
	if _, err := NewSubjects("agent.*"); err == nil {
		t.Error("wildcard prefix accepted")
	}
}

func TestToolMetadataRoundTrip(t *testing.T) {
	d := agentfleet.ToolDef{Name: "get_weather", Label: "Weather", Description: "d", InputSchema: []byte(`{"type":"object"}`),
		Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true}, Parallel: true, TimeoutMS: 1500}
	got, err := ToolFromMetadata(d.Name, ToolMetadata(&d))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != d.Name || got.Label != d.Label || string(got.InputSchema) != string(d.InputSchema) || got.Annotations != d.Annotations || !got.Parallel || got.TimeoutMS != 1500 {
		t.Errorf("round trip = %+v", got)
	}
	if _, err := ToolFromMetadata("x", map[string]string{MetaInputSchema: "{"}); err == nil || !strings.Contains(err.Error(), "input_schema is not valid JSON") {
		t.Errorf("bad schema: %v", err)
	}
}

func FuzzParseAbort(f *testing.F) {
	for _, s := range []string{"", `{"reason":"x"}`, "plain", `{"reason":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseAbort(data)
	})
}

func FuzzToolFromMetadata(f *testing.F) {
	f.Add("echo", `{"type":"object"}`, `{"read_only":true}`, "true", "1000")
	f.Add("x", "{", "[", "maybe", "-1")
	f.Fuzz(func(t *testing.T, name, schema, annotations, parallel, timeout string) {
		d, err := ToolFromMetadata(name, map[string]string{MetaInputSchema: schema, MetaAnnotations: annotations, MetaParallel: parallel, MetaTimeoutMS: timeout})
		if err == nil && (!ValidToken(d.Name) || d.TimeoutMS < 0) {
			t.Errorf("accepted %+v", d)
		}
	})
}

func TestIsCancel(t *testing.T) {
	s, _ := NewSubjects("acme.agent")
	for subject, want := range map[string]bool{
		"acme.agent.worker.Q94026aeuu1iC6cuHQEzSf.cancel": true,
		"acme.agent.worker.a-b_c.cancel":                  true,
		"acme.agent.worker..cancel":                       false,
		"acme.agent.worker.a.b.cancel":                    false,
		"acme.agent.worker.*.cancel":                      false,
		"agent.worker.x.cancel":                           false,
		"acme.agent.tool.echo":                            false,
		"$SYS.REQ.SERVER.PING":                            false,
		"":                                                false,
	} {
		if got := s.IsCancel(subject); got != want {
			t.Errorf("IsCancel(%q) = %v, want %v", subject, got, want)
		}
	}
}
