// Package asker runs one call of an ask tool: it sends the ask to the
// session of the agent it asks, the same ask a client sends, so that the
// child runs on whichever orchestrator owns that session, and waits for the
// child's answer. It is the I/O around package delegate's decisions.
package asker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tracing"
)

// Ask is one call of an ask tool.
type Ask struct {
	// Tool is the ask tool's name, Target the agent it asks and Session
	// the child session.
	Tool, Target, Session string
	// Message is what the child is asked.
	Message string
	// Parent is the run and call that ask (delegate.Encode).
	Parent *agentfleet.Parent
	// Timeout bounds the wait; 0 leaves it to ctx.
	Timeout time.Duration
	// Every is how long to wait for an answer before the ask is sent again
	// (client.AgentAsk).
	Every time.Duration
}

// Conn is where asks go.
type Conn struct {
	NC       *bus.Conn
	Subjects bus.Subjects
	Log      *slog.Logger
}

// Run sends a and waits for the child's final message, made the call's
// result (delegate.Result). The ask's message id is derived from the
// parent's call, so that the call run again (its run resumed elsewhere
// after a crash) is answered from the child's history, or by its run still
// going, and never runs the child twice. The wait ends with the answer,
// the timeout, or ctx: an abort or a timeout aborts the child too; a
// suspension (loop.ErrSuspended) leaves it running for the resumed call to
// find. The child's approvals show as the call's progress.
func (c Conn) Run(ctx context.Context, a Ask, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	id := delegate.MsgID(a.Parent)
	data, err := json.Marshal(map[string]string{"content": a.Message, "id": id})
	if err != nil {
		return nil, err
	}
	progress(map[string]any{"agent": a.Target, "session": a.Session})
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, a.Timeout, pipeline.ErrTimeout)
		defer cancel()
	}
	var waiting delegate.Waiting
	stop, err := client.FollowEvents(c.NC, c.Subjects.Event(a.Target, a.Session, string(agentfleet.EventToolApproval)), func(e *agentfleet.Event) {
		if p, ok := waiting.Report(e, a.Target, a.Session); ok {
			progress(p)
		}
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	header := delegate.Encode(a.Parent)
	// The child's run is traced under this call's span, in whichever
	// process runs it.
	for k, v := range tracing.Inject(ctx, nil) {
		if len(v) > 0 {
			header[k] = v[0]
		}
	}
	final, err := client.AskAgent(ctx, c.NC, c.Subjects, &client.AgentAsk{
		Agent: a.Target, Session: a.Session, Data: data, MsgID: id, Header: header, Every: a.Every,
	})
	if err != nil {
		cause := context.Cause(ctx)
		if cause == nil || errors.Is(cause, loop.ErrSuspended) {
			// The run goes on elsewhere: its call asks again there.
			return nil, err
		}
		p := a.Parent
		reason := fmt.Sprintf("the run %s of agent %s that asked it (call %s) was aborted", p.RunID, p.Agent, p.ToolCallID)
		if errors.Is(cause, pipeline.ErrTimeout) {
			reason = fmt.Sprintf("agent %s did not answer call %s of agent %s within %v", a.Target, p.ToolCallID, p.Agent, a.Timeout)
		}
		c.abort(a.Target, a.Session, reason)
		if errors.Is(cause, pipeline.ErrTimeout) {
			return nil, fmt.Errorf("Tool %s: %w: %s; its run was aborted", a.Tool, pipeline.ErrTimeout, reason)
		}
		return nil, err
	}
	res, isError := delegate.Result(a.Target, a.Session, final)
	if isError {
		return nil, &pipeline.ResultError{Result: res}
	}
	return res, nil
}

// abort asks the orchestrator of target's session to abort its run, as a
// client does.
func (c Conn) abort(target, session, reason string) {
	b, _ := json.Marshal(map[string]string{"reason": reason})
	if err := c.NC.Publish(c.Subjects.Client(bus.KindAbort, target, session), b); err != nil {
		c.Log.Warn("abort of a child run", "agent", target, "session", session, "err", err)
	}
}
