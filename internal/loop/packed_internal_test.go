package loop

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// TestUnpackHistoryRejectsBadBytes checks that the decoder of a packed
// history names what is wrong and where, for every cut of a good one and
// for bytes it never wrote.
func TestUnpackHistoryRejectsBadBytes(t *testing.T) {
	good, err := packHistory(nil, []agentfleet.Message{agentfleet.NewUserMessage("hi"),
		&agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("yes")}}},
		[]string{"run-1", "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	h, runs, err := unpackHistory(good)
	if err != nil || len(h) != 2 || runs[0] != "run-1" || runs[1] != "run-1" {
		t.Fatalf("unpack of a good history: %d messages, runs %q, err %v", len(h), runs, err)
	}
	first, err := packHistory(nil, []agentfleet.Message{agentfleet.NewUserMessage("hi")}, []string{"run-1"})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(good); n++ {
		if n == len(first) {
			continue // a whole history of one message
		}
		if _, _, err := unpackHistory(good[:n]); err == nil {
			t.Errorf("unpack of the first %d of %d bytes succeeded", n, len(good))
		} else if !strings.Contains(err.Error(), "offset") {
			t.Errorf("unpack of the first %d bytes: %v, which names no offset", n, err)
		}
	}
	for _, kind := range []byte{packUser, packAssistant, packTool} {
		var m agentfleet.Message = &agentfleet.UserMessage{Content: []agentfleet.Content{agentfleet.Text("hi")}, ID: "x", Timestamp: time.Now().UTC()}
		switch kind {
		case packAssistant:
			m = &agentfleet.AssistantMessage{Content: []agentfleet.Content{agentfleet.Text("hi")}, Usage: &agentfleet.Usage{InputTokens: 1}}
		case packTool:
			m = &agentfleet.ToolResultMessage{ToolCallID: "c", Details: map[string]any{"k": "v"}, AddedToolNames: []string{"t"}}
		}
		data, err := appendPackedMessage(nil, "r", m)
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(data) {
			if _, err := unpackMessage(kind, "r", data[:n]); err == nil || !strings.Contains(err.Error(), "offset") {
				t.Errorf("kind %c, the first %d of %d bytes: %v, want an error naming the offset", kind, n, len(data), err)
			}
		}
		if _, err := unpackMessage(kind, "r", append(data, 0)); err == nil {
			t.Errorf("kind %c with a byte after the message: no error", kind)
		}
	}
	for name, b := range map[string][]byte{
		"unknown kind":             {'x', 1, 2, '{', '}'},
		"first message, no run":    {'u', 0, 2, '{', '}'},
		"run id past the end":      {'u', 0xff, 0x01, 'r'},
		"message past the end":     {'u', 1, 0xff, 0x01, '{'},
		"message that is not JSON": {'u', 1, 2, 'n', 'o'},
	} {
		if _, _, err := unpackHistory(b); err == nil {
			t.Errorf("%s: unpack succeeded", name)
		}
	}
}

// TestPackedMessagesRoundTrip packs messages with every field set, and with
// the fields the packed form leaves out at values it must keep: each comes
// back as it was. A field added to a message type and not to its packed form
// fails the check that every field is set.
func TestPackedMessagesRoundTrip(t *testing.T) {
	now := time.Now().UTC()
	// A zone comes back by its offset, as from the history store's JSON.
	zone := time.Date(2026, 12, 2, 10, 0, 0, 1, time.FixedZone("", 3600))
	usage := &agentfleet.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, CachedInputTokens: 1, Cost: 0.000123}
	content := []agentfleet.Content{{Type: "t", Text: "x", Data: "d", MIMEType: "m", ID: "i", Name: "n",
		Arguments: json.RawMessage(`{"a":1}`), ToolCalls: []agentfleet.RawToolCall{{ID: "c", Type: "function", Name: "f"}}}}
	full := []agentfleet.Message{
		&agentfleet.UserMessage{Role: "other", Content: content, ID: "id", Timestamp: now,
			Parent: &agentfleet.Parent{Agent: "a", Session: "s", RunID: "r", ToolCallID: "c", Chain: []string{"a"}, Budget: &agentfleet.Budget{Tokens: 9, ToolCalls: 2}}, Priority: "batch"},
		&agentfleet.AssistantMessage{Role: "other", Content: content, API: "a", Provider: "p", Model: "m", Usage: usage,
			StopReason: agentfleet.StopReasonStop, ErrorMessage: "e", RunID: "another run", Timestamp: zone},
		&agentfleet.ToolResultMessage{Role: "other", ToolCallID: "c", ToolName: "n", Content: content,
			Details: map[string]any{"k": 1.5}, Usage: usage, AddedToolNames: []string{"x"}, IsError: true, Terminate: true,
			Timestamp: now},
	}
	for _, m := range full {
		v := reflect.ValueOf(m).Elem()
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%T.%s is not set in the test: is it in the packed form?", m, v.Type().Field(i).Name)
			}
		}
	}
	usual := []agentfleet.Message{
		&agentfleet.UserMessage{Role: agentfleet.RoleUser, Content: []agentfleet.Content{}},
		&agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, RunID: "run", Timestamp: now},
		&agentfleet.ToolResultMessage{Content: []agentfleet.Content{agentfleet.Text("")}, Timestamp: time.Unix(0, 0).UTC()},
		&agentfleet.AssistantMessage{Timestamp: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)},
		&agentfleet.UserMessage{Role: "-", Content: []agentfleet.Content{{Type: "tool_call", Arguments: json.RawMessage(" { \"a\" : 1 } ")}}},
		&agentfleet.ToolResultMessage{Role: "-x", Details: map[string]any{}, AddedToolNames: []string{},
			Content: []agentfleet.Content{{ToolCalls: []agentfleet.RawToolCall{}, Arguments: json.RawMessage{}}}},
	}
	for _, ms := range [][]agentfleet.Message{full, usual} {
		runs := make([]string, len(ms))
		for i := range runs {
			runs[i] = "run"
		}
		b, err := packHistory(nil, ms, runs)
		if err != nil {
			t.Fatal(err)
		}
		got, gotRuns, err := unpackHistory(b)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if !reflect.DeepEqual(got[i], m) || gotRuns[i] != "run" {
				t.Errorf("message %d came back as\n%#v\nwant\n%#v", i, got[i], m)
			}
		}
	}
}
