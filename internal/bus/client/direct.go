package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
)

// CallRequestJSON is the request of a Subjects.Call: one tool call.
type CallRequestJSON struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// CallReplyJSON is the answer to a Subjects.Call: the call's result, as the
// pipeline finalized it, or why the call could not be taken at all.
type CallReplyJSON struct {
	Result  *agentfleet.ToolResult `json:"result,omitempty"`
	IsError bool                   `json:"is_error"`
	Outcome string                 `json:"outcome,omitempty"`
	Error   string                 `json:"error,omitempty"`
}

// ErrNoOrchestrator is returned by Ask and CallAgentTool when no
// orchestrator listens on the subject.
var ErrNoOrchestrator = errors.New("no orchestrator listens")

// Ask sends text to agent's session on its ask subject and waits for the
// final message of the run that answers it, passing the session's events
// to onEvent (when not nil) meanwhile, up to the run's run.end. When ctx
// ends first, it asks the
// orchestrator to abort the run and returns ctx's cause.
func Ask(ctx context.Context, nc *bus.Conn, subjects bus.Subjects, agent, session, text string, onEvent func(*agentfleet.Event)) (*agentfleet.AssistantMessage, error) {
	subject := subjects.Client(bus.KindAsk, agent, session)
	stop, last, err := followEvents(nc, subjects.Prefix+".events."+agent+"."+session+".>", onEvent,
		func(e *agentfleet.Event) bool { return e.Type == agentfleet.EventRunEnd })
	if err != nil {
		return nil, err
	}
	defer stop()
	id := "mcp-" + uuid.NewString()
	data, _ := json.Marshal(struct {
		Content string `json:"content"`
		ID      string `json:"id"`
	}{text, id})
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(nats.MsgIdHdr, id)
	reply, err := nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("%w on %s", ErrNoOrchestrator, subject)
		}
		if ctx.Err() != nil {
			// The run goes on without anyone waiting: stop it.
			abort, _ := json.Marshal(map[string]string{"reason": "the MCP client canceled the ask"})
			nc.Publish(subjects.Client(bus.KindAbort, agent, session), abort)
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("ask on %s: %w", subject, err)
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &final); err != nil {
		return nil, fmt.Errorf("the answer on %s is not an assistant message: %w", subject, err)
	}
	awaitLast(last)
	return &final, nil
}

// CallAgentTool runs one call of agent's tools on an orchestrator, through
// its pipeline, and returns the reply. The call's tool.update events go to
// onEvent (when not nil), all of them before it returns. timeout bounds
// the wait for the reply.
func CallAgentTool(ctx context.Context, nc *bus.Conn, subjects bus.Subjects, agent, session string, call *CallRequestJSON, onEvent func(*agentfleet.Event), timeout time.Duration) (*CallReplyJSON, error) {
	subject := subjects.Call(agent, session)
	stop, last, err := followEvents(nc, subjects.Event(agent, session, "tool.>"), onEvent,
		func(e *agentfleet.Event) bool { return e.Type == agentfleet.EventToolEnd && e.ToolCallID == call.ID })
	if err != nil {
		return nil, err
	}
	defer stop()
	data, err := json.Marshal(call)
	if err != nil {
		return nil, fmt.Errorf("call %s: arguments: %w", call.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("subscribe %s: %w", inbox, err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, data); err != nil {
		return nil, fmt.Errorf("call %s on %s: %w", call.Name, subject, err)
	}
	// A publish the server refuses is told asynchronously: ask now, or the
	// call would wait for its timeout.
	if err := nc.FlushWithContext(ctx); err != nil {
		return nil, fmt.Errorf("call %s on %s: %w", call.Name, subject, err)
	}
	if err := nc.LastError(); errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), subject) {
		return nil, fmt.Errorf("call %s: this NATS user may not publish on %s (tool calls need that right; the client role has not): %w", call.Name, subject, err)
	}
	reply, err := sub.NextMsgWithContext(ctx)
	if err == nil && len(reply.Data) == 0 && reply.Header.Get("Status") == "503" {
		err = nats.ErrNoResponders
	}
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("%w on %s", ErrNoOrchestrator, subject)
		}
		return nil, fmt.Errorf("call %s on %s: %w", call.Name, subject, err)
	}
	var r CallReplyJSON
	if err := json.Unmarshal(reply.Data, &r); err != nil {
		return nil, fmt.Errorf("the answer on %s is not a call reply: %w", subject, err)
	}
	if r.Error != "" {
		return nil, errors.New(r.Error)
	}
	awaitLast(last)
	return &r, nil
}

// followEvents subscribes subject and passes each event to onEvent until
// the returned stop is called; with a nil onEvent it does nothing. last
// is closed once an event for which isLast holds has been passed on.
func followEvents(nc *bus.Conn, subject string, onEvent func(*agentfleet.Event), isLast func(*agentfleet.Event) bool) (stop func(), last <-chan struct{}, err error) {
	done := make(chan struct{})
	if onEvent == nil {
		close(done)
		return func() {}, done, nil
	}
	var once sync.Once
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) {
		var e agentfleet.Event
		if json.Unmarshal(m.Data, &e) != nil {
			return
		}
		onEvent(&e)
		if isLast(&e) {
			once.Do(func() { close(done) })
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, nil, fmt.Errorf("subscribe %s: %w", subject, err)
	}
	return func() { sub.Unsubscribe() }, done, nil
}

// lastEventWait bounds the wait, after an answer, for the event that ends
// what was answered. It is published before the answer, but the two come
// through different subscriptions, which the client serves apart.
const lastEventWait = 2 * time.Second

func awaitLast(last <-chan struct{}) {
	t := time.NewTimer(lastEventWait)
	defer t.Stop()
	select {
	case <-last:
	case <-t.C:
	}
}
