package history_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"go.opentelemetry.io/otel/trace"
)

// TestUserMessageKeepsItsTrace stores a user message with the trace
// context it was sent with, and one without: the record of the first
// holds a traceparent header, in the W3C name's case, and loads with the
// context (remote, sampled); the other, and the assistant message, load
// with none.
func TestUserMessageKeepsItsTrace(t *testing.T) {
	st, js, _ := open(t, "w")
	ctx := context.Background()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.AppendTraced(ctx, "r1", agentfleet.NewUserMessage("traced"), sc); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "r1", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("ok")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, "r2", agentfleet.NewUserMessage("untraced")); err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "AGENT_HISTORY")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.Header["traceparent"]; len(got) != 1 || got[0] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("the traced record's headers are %v, want traceparent 00-4bf9…-00f0…-01", raw.Header)
	}
	l, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Records) != 3 {
		t.Fatalf("%d records, want 3", len(l.Records))
	}
	if got := l.Records[0].Trace; got.TraceID() != tid || got.SpanID() != sid || !got.IsSampled() || !got.IsRemote() {
		t.Errorf("the traced message loads with trace context %+v, want %s/%s sampled", got, tid, sid)
	}
	for _, r := range l.Records[1:] {
		if r.Trace.IsValid() {
			t.Errorf("record %d loads with trace context %+v, want none", r.Seq, r.Trace)
		}
	}
}
