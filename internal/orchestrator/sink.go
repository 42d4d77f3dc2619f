package orchestrator

import (
	"context"
	"log/slog"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/events"
)

// Sink is where an orchestrator's events go: it names the orchestrator
// (id) on run.start and run.resumed, counts each event with obs (if not
// nil), publishes it with pub and logs it with log: every event at debug
// level, the end of a run at info, failures and retries at warn and info,
// with the run, session and tool call as attributes.
type Sink struct {
	id  string
	obs Observer
	pub *events.Publisher
	log *slog.Logger
}

// NewSink returns the sink of orchestrator id's events. The benchmarks use
// it to pay what an orchestrator pays per event.
func NewSink(id string, obs Observer, pub *events.Publisher, log *slog.Logger) *Sink {
	return &Sink{id: id, obs: obs, pub: pub, log: log}
}

// Emit implements agentfleet.EventSink.
func (k *Sink) Emit(e *agentfleet.Event) {
	if e.Type == agentfleet.EventRunStart || e.Type == agentfleet.EventRunResumed {
		e.Orchestrator = k.id
	}
	if k.obs != nil {
		k.obs.Event(e)
	}
	k.pub.Emit(e)
	k.logEvent(e)
}

func (k *Sink) logEvent(e *agentfleet.Event) {
	level := slog.LevelDebug
	switch {
	case e.Type == agentfleet.EventError, e.Type == agentfleet.EventToolEnd && e.IsError:
		level = slog.LevelWarn
	case e.Type == agentfleet.EventRunEnd:
		level = slog.LevelInfo
	}
	if e.Type == agentfleet.EventToolUpdate {
		if r, ok := retryOf(e); ok {
			// A lost worker or a timed-out attempt is the operator's
			// business even when the retry saves the call.
			attrs := []any{"agent", e.Agent, "session", e.Session, "run_id", e.RunID, "tool_call_id", e.ToolCallID, "tool", e.ToolName}
			if w, ok := r["worker"]; ok { // absent when no worker had taken the call
				attrs = append(attrs, "worker", w)
			}
			k.log.Info("retrying tool call", append(attrs, "attempt", r["attempt"], "reason", r["reason"])...)
			return
		}
	}
	ctx := context.Background()
	if !k.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.String("agent", e.Agent), slog.String("session", e.Session), slog.String("run_id", e.RunID), slog.Int("turn", e.Turn)}
	if e.ToolCallID != "" {
		attrs = append(attrs, slog.String("tool_call_id", e.ToolCallID), slog.String("tool", e.ToolName))
	}
	switch e.Type {
	case agentfleet.EventToolEnd:
		attrs = append(attrs, slog.Float64("duration_ms", e.DurationMS), slog.String("worker", e.Worker))
		if e.IsError && e.Result != nil {
			attrs = append(attrs, slog.String("error", agentfleet.JoinText(e.Result.Content)))
		}
	case agentfleet.EventRunEnd:
		attrs = append(attrs, slog.String("stop_reason", string(e.StopReason)))
		if e.Message != nil && e.Message.ErrorMessage != "" {
			attrs = append(attrs, slog.String("error", e.Message.ErrorMessage))
		}
	case agentfleet.EventError:
		attrs = append(attrs, slog.String("error", e.ErrorMessage))
	}
	k.log.LogAttrs(ctx, level, string(e.Type), attrs...)
}

// retryOf returns the retry a tool.update announces ({"retry": {"attempt",
// "reason", "worker"}}, as the tool client sends it), if it is one.
func retryOf(e *agentfleet.Event) (map[string]any, bool) {
	p, ok := e.Partial.(map[string]any)
	if !ok {
		return nil, false
	}
	r, ok := p["retry"].(map[string]any)
	return r, ok
}
