package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
)

// AgentAsk is one ask of an agent's session by another agent's ask tool.
type AgentAsk struct {
	Agent, Session string
	// Data is the payload, {"content", "id"}; MsgID its Nats-Msg-Id, which
	// the session de-duplicates on.
	Data  []byte
	MsgID string
	// Header holds more headers (the parent's, package delegate).
	Header map[string]string
	// Every is how long to wait for an answer before the same ask is sent
	// again, with the same id and reply subject (a core message lost on
	// its way, an orchestrator that died before it relayed it); default
	// 15s. A duplicate is answered from the session's stored history or
	// when the run that took the first ends, so asking again never runs
	// the agent twice.
	Every time.Duration
}

// AskAgent sends a on the ask subject of its session and returns the
// first final message published on its reply subject, asking again each
// a.Every, and a little later when nobody listens or the answer says to
// try again (the ask could not be stored for the session's owner yet). It
// returns ctx's cause when ctx ends first; aborting the run is the
// caller's.
func AskAgent(ctx context.Context, nc *bus.Conn, subjects bus.Subjects, a *AgentAsk) (*agentfleet.AssistantMessage, error) {
	every := a.Every
	if every <= 0 {
		every = 15 * time.Second
	}
	subject := subjects.Client(bus.KindAsk, a.Agent, a.Session)
	inbox := nc.NewRespInbox()
	ch := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(inbox, ch)
	if err != nil {
		return nil, fmt.Errorf("ask %s: subscribe the reply subject: %w", subject, err)
	}
	defer sub.Unsubscribe()
	send := func() error {
		m := message(subject, inbox, a.Data, a.MsgID)
		for k, v := range a.Header {
			m.Header.Set(k, v)
		}
		return nc.PublishMsg(m)
	}
	t := time.NewTimer(every)
	defer t.Stop()
	resend, first := true, true
	for {
		if resend {
			if err := send(); err != nil {
				return nil, fmt.Errorf("ask %s: %w", subject, err)
			}
			if first {
				// A refusal by the server's permissions would otherwise
				// look like an agent that never answers.
				if err := checkDenied(nc, subject, inbox); err != nil {
					return nil, fmt.Errorf("ask %s: %w", subject, err)
				}
				first = false
			}
			t.Reset(every)
			resend = false
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.C:
			resend = true
		case m := <-ch:
			if IsNoResponders(m) {
				// No orchestrator listens now (all restarting): ask again
				// soon, not at once.
				t.Reset(min(every, time.Second))
				continue
			}
			if len(m.Data) == 0 {
				continue // another status
			}
			var final agentfleet.AssistantMessage
			if err := json.Unmarshal(m.Data, &final); err != nil {
				return nil, fmt.Errorf("the answer on %s is not an assistant message: %w", subject, err)
			}
			if final.StopReason == agentfleet.StopReasonError && final.RunID == "" && strings.HasSuffix(final.ErrorMessage, "try again") {
				// Not the run's answer but the input's: the ask could not be
				// stored or its session loaded yet.
				t.Reset(min(every, time.Second))
				continue
			}
			return &final, nil
		}
	}
}

// checkDenied makes a round trip to the server and reports a permission
// violation on one of subjects (Conn.CheckDenied, for a plain connection).
func checkDenied(nc *bus.Conn, subjects ...string) error {
	if err := nc.FlushTimeout(FlushTimeout); err != nil {
		return fmt.Errorf("NATS: %w", err)
	}
	err := nc.LastError()
	if !errors.Is(err, nats.ErrPermissionViolation) {
		return nil
	}
	for _, s := range subjects {
		if strings.Contains(err.Error(), `"`+s+`"`) {
			return fmt.Errorf("this NATS user lacks the permission: %w (see deploy/nats/README.md for what each role may do)", err)
		}
	}
	return nil
}
