package agentfleet

import (
	"encoding/json"
	"time"
)

// EventType is the kind of a lifecycle event; it is also the last tokens of
// the event's subject.
type EventType string

// The lifecycle events, in the order a run emits them: run.start, then per
// turn turn.start, message.start, message.update*, message.end,
// (tool.start, tool.update*, tool.end)*, turn.end, and finally run.end.
//
// A run that an orchestrator had to leave before its end (it shut down past
// its grace, or lost the lead) emits run.suspended instead of run.end; the
// orchestrator that takes the run on emits run.resumed and goes on with its
// turns, and run.end comes once, from whichever ends it.
const (
	EventRunStart      EventType = "run.start"
	EventRunEnd        EventType = "run.end"
	EventRunSuspended  EventType = "run.suspended"
	EventRunResumed    EventType = "run.resumed"
	EventTurnStart     EventType = "turn.start"
	EventTurnEnd       EventType = "turn.end"
	EventMessageStart  EventType = "message.start"
	EventMessageUpdate EventType = "message.update"
	EventMessageEnd    EventType = "message.end"
	EventToolStart     EventType = "tool.start"
	EventToolUpdate    EventType = "tool.update"
	EventToolEnd       EventType = "tool.end"
	// EventToolApproval comes between a call's tool.start and its tool.end
	// when the call needs a person's approval: once when it starts to wait
	// (decision "pending", with its deadline), and once when it is decided.
	EventToolApproval EventType = "tool.approval"
	EventError        EventType = "error"
	// EventContextCompacted comes after message.start when the request of
	// the turn leaves out or shortens part of the history to fit the
	// model's context window: what was dropped, and the estimated tokens
	// before and after.
	EventContextCompacted EventType = "context.compacted"
	// EventBudgetExceeded comes before the run.end of a run stopped by a
	// budget: which one, its limit and what was used.
	EventBudgetExceeded EventType = "budget.exceeded"
	// EventSessionHandoff comes before the run.end of a run that handed
	// its session over to another agent (a transfer_to_<agent> call):
	// From, To, the call's ToolCallID and Reason.
	EventSessionHandoff EventType = "session.handoff"
	// EventModelWaiting comes after message.start when the turn's model
	// call waits for the fleet's shared quota of its model: Model, the
	// run's Priority, the Reason (rate_requests, rate_tokens, concurrency,
	// paused, queued) and the wait expected, in DurationMS (0: unknown).
	EventModelWaiting EventType = "model.waiting"

	// Fleet events, published on <prefix>.events._.fleet.<type>: a scripted
	// tool was written (or replaced) or deleted.
	EventToolWritten EventType = "tool.written"
	EventToolDeleted EventType = "tool.deleted"
)

// Event is one lifecycle event. The envelope fields (type, agent, session,
// run id, turn, sequence number, time) are always set; the others belong to
// some kinds only and are omitted from the JSON form when empty.
type Event struct {
	Type    EventType `json:"type"`
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	RunID   string    `json:"run_id,omitempty"`
	Turn    int       `json:"turn"`
	// Seq numbers the events of one session from 1, without gaps.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// TraceID is the W3C trace id (32 hex digits) of the run's trace, when
	// the orchestrator records traces; a dashboard links it to a tracing
	// UI.
	TraceID string `json:"trace_id,omitempty"`

	// run.end
	StopReason StopReason `json:"stop_reason,omitempty"`
	// message.update: the text delta.
	Delta string `json:"delta,omitempty"`
	// message.end, run.end: the assistant message, as "assistant".
	Message *AssistantMessage `json:"assistant,omitempty"`

	// tool.start, tool.update, tool.end
	ToolCallID string         `json:"tool_call_id,omitempty"`
	ToolName   string         `json:"tool_name,omitempty"`
	Arguments  map[string]any `json:"arguments,omitempty"`
	Partial    any            `json:"partial,omitempty"`
	Result     *ToolResult    `json:"result,omitempty"`
	IsError    bool           `json:"-"`
	DurationMS float64        `json:"duration_ms,omitempty"`
	Worker     string         `json:"worker,omitempty"`
	// Orchestrator is the id of the orchestrator that runs the run, on
	// run.start and run.resumed.
	Orchestrator string `json:"orchestrator,omitempty"`
	Attempt      int    `json:"attempt,omitempty"`
	// Outcome classifies a tool.end: ok, error, not_found, invalid, blocked,
	// aborted, skipped, timeout, worker_lost, no_responders, truncated.
	Outcome string `json:"outcome,omitempty"`

	// tool.approval: the tool's annotations, when the call must be decided,
	// the decision (pending, approved, rejected, timed_out), its id and
	// reason.
	Annotations *Annotations `json:"annotations,omitempty"`
	Deadline    *time.Time   `json:"deadline,omitempty"`
	Decision    string       `json:"decision,omitempty"`
	DecisionID  string       `json:"decision_id,omitempty"`
	Reason      string       `json:"reason,omitempty"`

	// context.compacted: the strategy ("truncate"), the whole turns left
	// out of the request (DroppedMessages messages), the tool results
	// shortened in it, and the estimated tokens of the request before and
	// after. Reason says why: "window" (the history does not fit), or
	// "context_length_exceeded" (the model refused the request as too long).
	Strategy         string `json:"strategy,omitempty"`
	DroppedTurns     int    `json:"dropped_turns,omitempty"`
	DroppedMessages  int    `json:"dropped_messages,omitempty"`
	ShortenedResults int    `json:"shortened_results,omitempty"`
	TokensBefore     int    `json:"tokens_before,omitempty"`
	TokensAfter      int    `json:"tokens_after,omitempty"`
	// budget.exceeded: the budget (max_tokens_per_run,
	// max_tokens_per_session, max_tool_calls_per_run), its limit and what
	// was used (tokens or tool calls).
	Budget string `json:"budget,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Used   int    `json:"used,omitempty"`
	// budget.exceeded of a cost budget (max_cost_per_run,
	// max_cost_per_session, max_cost_per_agent): its limit and what was
	// used, in US dollars.
	LimitUSD float64 `json:"limit_usd,omitempty"`
	UsedUSD  float64 `json:"used_usd,omitempty"`

	// model.waiting: the model whose quota the call waits for, and the
	// run's priority.
	Model    string `json:"model,omitempty"`
	Priority string `json:"priority,omitempty"`

	// session.handoff: the agent that served the session and the one
	// that serves it from now on.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`

	// error: what went wrong, and what was rejected.
	ErrorMessage string `json:"message,omitempty"`
	Subject      string `json:"subject,omitempty"`
	Payload      string `json:"payload,omitempty"`

	// Parent, on every event of a run that answers another agent's tool
	// call, names that call (see Parent).
	Parent *Parent `json:"parent,omitempty"`
}

// MarshalJSON writes is_error on tool.end events, where it is always present.
// AppendJSON writes the same bytes without reflection; this stays the
// reference that its tests compare against.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	if e.Type == EventToolEnd {
		return json.Marshal(struct {
			plain
			IsError bool `json:"is_error"`
		}{plain(e), e.IsError})
	}
	return json.Marshal(plain(e))
}

// UnmarshalJSON reads an event, is_error included.
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	var v struct {
		plain
		IsError bool `json:"is_error"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*e = Event(v.plain)
	e.IsError = v.IsError
	return nil
}

// EventSink receives lifecycle events. Emit must not block for long: the loop
// calls it inline.
type EventSink interface {
	Emit(e *Event)
}

// EventSinkFunc adapts a function to EventSink.
type EventSinkFunc func(e *Event)

// Emit implements EventSink.
func (f EventSinkFunc) Emit(e *Event) { f(e) }
