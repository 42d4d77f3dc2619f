package approval_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestApprovalSpan waits for decisions under the span of a tool call: each
// wait is a span "approval rm" under it, with the decision and its id; a
// wait the run ended is an error span. A call its policy does not hold,
// or one without a recording span, starts none.
func TestApprovalSpan(t *testing.T) {
	for _, tc := range []struct {
		name         string
		decide       *agentfleet.ApprovalDecision // nil: no decision
		abort        bool
		wantDecision string
		wantID       string
	}{
		{name: "approved", decide: &agentfleet.ApprovalDecision{Approve: true, ID: "d1"}, wantDecision: "approved", wantID: "d1"},
		{name: "rejected", decide: &agentfleet.ApprovalDecision{Approve: false, ID: "d2", Reason: "no"}, wantDecision: "rejected", wantID: "d2"},
		{name: "timed out", wantDecision: "timed_out", wantID: "deadline"},
		{name: "aborted", abort: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			defer tp.Shutdown(context.Background())
			timeout := time.Hour
			if tc.decide == nil && !tc.abort {
				timeout = 20 * time.Millisecond
			}
			g := approval.New(approval.Config{Policy: approval.Policy{Tools: []string{"rm"}, Timeout: timeout}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx, callSpan := tp.Tracer("test").Start(ctx, "execute_tool rm")
			in := before("c1")
			pending := make(chan struct{})
			in.Sink = agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
				if e.Decision == agentfleet.ApprovalPending {
					close(pending)
				}
			})
			done := make(chan error, 1)
			go func() { _, err := g.Hook(ctx, in); done <- err }()
			<-pending
			switch {
			case tc.decide != nil:
				d := *tc.decide
				d.ToolCallID = "c1"
				g.Decide(&d, func(*agentfleet.ApprovalReply, bool) {})
			case tc.abort:
				cancel()
			}
			err := <-done
			callSpan.End()
			if (err != nil) != tc.abort {
				t.Fatalf("hook err = %v", err)
			}

			var spans []sdktrace.ReadOnlySpan
			for _, s := range rec.Ended() {
				if s.Name() == "approval rm" {
					spans = append(spans, s)
				}
			}
			if len(spans) != 1 {
				t.Fatalf("%d approval spans of %d spans, want 1", len(spans), len(rec.Ended()))
			}
			s := spans[0]
			if s.Parent().SpanID() != callSpan.SpanContext().SpanID() || s.SpanContext().TraceID() != callSpan.SpanContext().TraceID() {
				t.Errorf("approval span parent %s, want the call span %s", s.Parent().SpanID(), callSpan.SpanContext().SpanID())
			}
			attrs := map[attribute.Key]string{}
			for _, kv := range s.Attributes() {
				attrs[kv.Key] = kv.Value.Emit()
			}
			if attrs[tracing.GenAIToolName] != "rm" || attrs[tracing.GenAIToolCallID] != "c1" {
				t.Errorf("approval span attributes %v, want tool rm call c1", attrs)
			}
			if tc.abort {
				if s.Status().Code != codes.Error {
					t.Errorf("aborted wait: status %+v, want Error", s.Status())
				}
				if _, ok := attrs[tracing.Decision]; ok {
					t.Errorf("aborted wait has decision %q", attrs[tracing.Decision])
				}
				return
			}
			if attrs[tracing.Decision] != tc.wantDecision || attrs[tracing.DecisionID] != tc.wantID {
				t.Errorf("decision %q id %q, want %q %q", attrs[tracing.Decision], attrs[tracing.DecisionID], tc.wantDecision, tc.wantID)
			}
			if s.Status().Code == codes.Error {
				t.Errorf("status %+v", s.Status())
			}
		})
	}
}

// TestApprovalSpanOnlyWhenRecording: a call the policy does not hold has
// no approval span, and neither has the wait of a call sampled out.
func TestApprovalSpanOnlyWhenRecording(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	g := approval.New(approval.Config{Policy: approval.Policy{Tools: []string{"rm"}, Timeout: time.Millisecond}})

	// Not a tool the policy holds: no wait, no span.
	ctx, span := tp.Tracer("test").Start(context.Background(), "execute_tool ls")
	in := before("c1")
	in.Tool = &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "ls"}}
	in.Call.Name = "ls"
	if res, err := g.Hook(ctx, in); res != nil || err != nil {
		t.Fatalf("hook of ls = %+v, %v", res, err)
	}
	span.End()

	// A sampled-out call: the wait is not recorded.
	never := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))
	defer never.Shutdown(context.Background())
	ctx, span = never.Tracer("test").Start(context.Background(), "execute_tool rm")
	if res, err := g.Hook(ctx, before("c2")); err != nil || res == nil || !res.Block {
		t.Fatalf("hook of rm = %+v, %v; want it blocked at the deadline", res, err)
	}
	span.End()
	for _, s := range rec.Ended() {
		if s.Name() != "execute_tool ls" {
			t.Errorf("span %s recorded", s.Name())
		}
	}
}
