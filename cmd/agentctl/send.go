package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/client"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// defaultAskTimeout bounds an ask when --timeout is not given: long enough
// for a run of several turns with slow tools.
const defaultAskTimeout = 5 * time.Minute

// text returns the message text of ask, send and steer: the arguments after
// agent and session joined by spaces, or standard input for "-".
func (m *Main) text() (string, error) {
	text := strings.Join(m.pos[2:], " ")
	if text == "-" {
		b, err := io.ReadAll(m.Stdin)
		if err != nil {
			return "", fmt.Errorf("reading the text from standard input: %w", err)
		}
		text = strings.TrimRight(string(b), "\n")
	}
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the text is empty")
	}
	if len(text) > wire.MaxTextBytes {
		return "", fmt.Errorf("the text of %d bytes exceeds the limit of %d", len(text), wire.MaxTextBytes)
	}
	return text, nil
}

// payload returns the JSON body of an in, ask or steer message. It is
// always an object, so that a text that happens to start with "{" is not
// taken for one.
func payload(text, id string) []byte {
	b, _ := json.Marshal(struct {
		Content string `json:"content"`
		ID      string `json:"id,omitempty"`
	}{text, id})
	return b
}

// ask sends a message on <prefix>.ask.<agent>.<session> and prints the
// final message of the run that answered it.
func (m *Main) ask(ctx context.Context) error {
	text, err := m.text()
	if err != nil {
		return err
	}
	final, data, err := m.askFor(ctx, m.pos[0], m.pos[1], payload(text, m.ID))
	if err != nil || final == nil {
		return err
	}
	if m.JSON {
		fmt.Fprintf(m.Stdout, "%s\n", data)
	} else if text := agentfleet.JoinText(final.Content); text != "" {
		fmt.Fprintln(m.Stdout, text)
	}
	return m.reportStop(final)
}

// askFor sends body on <prefix>.ask.<agent>.<session> and returns the
// final message of the run that answered it, and its JSON; nil, nil, nil
// when interrupted.
func (m *Main) askFor(ctx context.Context, agent, session string, body []byte) (*agentfleet.AssistantMessage, []byte, error) {
	subject := m.subjects.Client(bus.KindAsk, agent, session)
	timeout := m.Timeout
	if timeout == 0 {
		timeout = defaultAskTimeout
	}
	errTimeout := fmt.Errorf("no answer on %s within %v (see --timeout)", subject, timeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()

	inbox := m.conn.NewInbox()
	r, err := m.conn.Subscribe(inbox)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	if err := m.conn.PublishRequest(subject, inbox, body, m.ID); err != nil {
		return nil, nil, err
	}
	var data []byte
	select {
	case msg := <-r.C:
		if client.IsNoResponders(msg) {
			return nil, nil, client.ErrNoListener(subject)
		}
		data = msg.Data
	case err := <-m.conn.Denied():
		return nil, nil, err
	case <-ctx.Done():
		if cause := context.Cause(ctx); cause == errTimeout || errors.Is(cause, context.DeadlineExceeded) {
			return nil, nil, cause
		}
		return nil, nil, nil // interrupted
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal(data, &final); err != nil {
		return nil, nil, fmt.Errorf("the answer on %s is not an assistant message: %w", subject, err)
	}
	return &final, data, nil
}

// reportStop tells on Stderr why a run did not simply stop, and fails for
// the stop reasons that mean the answer is missing.
func (m *Main) reportStop(final *agentfleet.AssistantMessage) error {
	if final.StopReason == "" || final.StopReason == agentfleet.StopReasonStop {
		return nil
	}
	line := "stop_reason: " + string(final.StopReason)
	if final.ErrorMessage != "" {
		line += ": " + final.ErrorMessage
	}
	fmt.Fprintln(m.Stderr, line)
	switch final.StopReason {
	case agentfleet.StopReasonError, agentfleet.StopReasonAborted:
		return exitCode(1)
	}
	return nil
}

// send publishes a message on <prefix>.in.<agent>.<session>.
func (m *Main) send(ctx context.Context) error {
	return m.sendKind(bus.KindIn)
}

// steer publishes a message on <prefix>.steer.<agent>.<session>.
func (m *Main) steer(ctx context.Context) error {
	return m.sendKind(bus.KindSteer)
}

func (m *Main) sendKind(kind string) error {
	text, err := m.text()
	if err != nil {
		return err
	}
	return m.conn.Publish(m.subjects.Client(kind, m.pos[0], m.pos[1]), payload(text, m.ID), m.ID)
}

// defaultAbortTimeout bounds the wait for the orchestrator's answer to an
// abort when --timeout is not given.
const defaultAbortTimeout = 10 * time.Second

// abort sends a request on <prefix>.abort.<agent>.<session>, with the rest
// of the arguments as the reason, and fails with the orchestrator's reason
// when it refuses (no run to abort, an unknown agent).
func (m *Main) abort(ctx context.Context) error {
	return m.requestAbort(ctx, m.pos[0], m.pos[1], strings.Join(m.pos[2:], " "))
}

func abortPayload(reason string) []byte {
	if reason == "" {
		return nil
	}
	data, _ := json.Marshal(map[string]string{"reason": reason})
	return data
}

func (m *Main) requestAbort(ctx context.Context, agent, session, reason string) error {
	subject := m.subjects.Client(bus.KindAbort, agent, session)
	timeout := m.Timeout
	if timeout == 0 {
		timeout = defaultAbortTimeout
	}
	data, err := m.conn.Request(ctx, subject, abortPayload(reason), timeout)
	if errors.Is(err, client.ErrInterrupted) {
		return nil
	}
	if err != nil {
		return err
	}
	var answer agentfleet.AssistantMessage
	if err := json.Unmarshal(data, &answer); err != nil {
		return fmt.Errorf("the answer on %s is not an assistant message: %w", subject, err)
	}
	if answer.StopReason == agentfleet.StopReasonError {
		return fmt.Errorf("the orchestrator refused the abort: %s", answer.ErrorMessage)
	}
	return nil
}

// publishAbort publishes on <prefix>.abort.<agent>.<session> without
// waiting for the outcome (chat's Ctrl-C, which shows the run's end).
func (m *Main) publishAbort(agent, session, reason string) error {
	return m.conn.Publish(m.subjects.Client(bus.KindAbort, agent, session), abortPayload(reason), "")
}
