// Package a2aremote asks agents of other systems over A2A (0.3,
// JSON-RPC): each remote agent of a profile becomes a tool ask_<name>
// whose call sends a message, follows the task's stream (its status
// updates as the call's progress, so tool.update events), and returns
// the task's answer; a task that waits for input returns what it asks,
// with the task id to answer it with; the call's end (its timeout, an
// abort) cancels the remote task. The peer is trusted for nothing: its
// bytes, events and states are bounded and checked (Follow).
package a2aremote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/profile"
)

// Limits bound what one call takes from a remote agent.
type Limits struct {
	// MaxBytes bounds the bytes of one response (a stream whole);
	// default 8 MiB.
	MaxBytes int64
	// MaxEvents bounds the events of one stream; default 10000.
	MaxEvents int
	// MaxText bounds the answer's text; default 64 KiB.
	MaxText int
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = 8 << 20
	}
	if l.MaxEvents <= 0 {
		l.MaxEvents = 10000
	}
	if l.MaxText <= 0 {
		l.MaxText = 64 << 10
	}
	return l
}

// ToolPrefix begins the name of a remote agent's tool, as of a local one.
const ToolPrefix = "ask_"

// Tool returns the tool of remote agent r: arguments {message,
// task_id?, context_id?}, parallel, not idempotent (a message sent again
// may be taken again), bounded by timeout. Its token is read now; a
// token source that cannot be read is an error.
func Tool(r profile.RemoteAgent, timeout time.Duration, limits Limits) (*agentfleet.Tool, error) {
	token, err := readToken(r)
	if err != nil {
		return nil, err
	}
	schema, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"message":    map[string]any{"type": "string", "description": "what to ask remote agent " + r.Name},
			"task_id":    map[string]any{"type": "string", "description": "a task of " + r.Name + " that asked for input, as an earlier call's result named it: the message answers it"},
			"context_id": map[string]any{"type": "string", "description": "a conversation with " + r.Name + " to continue, as an earlier call's result named it"},
		},
		"required":             []string{"message"},
		"additionalProperties": false,
	})
	c := &caller{agent: r.Name, url: r.URL, limits: limits.withDefaults(), token: token}
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name: ToolPrefix + r.Name, Label: "ask " + r.Name + " (A2A)",
			Description: "Ask the remote agent " + r.Name + " (over A2A) and get its answer. If it asks for input, call again with its task_id and the answer.",
			InputSchema: schema, Parallel: true, TimeoutMS: timeout.Milliseconds(),
		},
		Handler: agentfleet.HandlerFunc(c.call),
	}, nil
}

func readToken(r profile.RemoteAgent) (string, error) {
	switch {
	case r.Auth.TokenEnv != "":
		t := strings.TrimSpace(os.Getenv(r.Auth.TokenEnv))
		if t == "" {
			return "", fmt.Errorf("remote agent %s: auth token_env %s is not set", r.Name, r.Auth.TokenEnv)
		}
		return t, nil
	case r.Auth.TokenFile != "":
		b, err := os.ReadFile(r.Auth.TokenFile)
		if err != nil {
			return "", fmt.Errorf("remote agent %s: auth token_file: %w", r.Name, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

type caller struct {
	agent, url, token string
	limits            Limits
}

// call runs one call: send, follow, answer; cancel the remote task when
// the call ends first.
func (c *caller) call(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
	text, _ := call.Arguments["message"].(string)
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("Tool %s: argument message must be a non-empty string", call.Name)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
	msg.ID = "agentfleet-" + call.ID // the same call sent again is the same message
	if s, _ := call.Arguments["task_id"].(string); s != "" {
		msg.TaskID = a2a.TaskID(s)
	}
	if s, _ := call.Arguments["context_id"].(string); s != "" {
		msg.ContextID = s
	}
	bound := &bounded{token: c.token, max: c.limits.MaxBytes, next: http.DefaultTransport}
	client, err := a2aclient.NewFromEndpoints(ctx, []a2a.AgentInterface{{URL: c.url, Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(&http.Client{Transport: bound}))
	if err != nil {
		return nil, fmt.Errorf("remote agent %s at %s: %w", c.agent, c.url, err)
	}
	f := &Follow{MaxEvents: c.limits.MaxEvents, MaxText: c.limits.MaxText, Answering: msg.TaskID != ""}
	done, err := false, error(nil)
	for ev, e := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: msg}) {
		if e != nil {
			err = e
			break
		}
		var progress map[string]any
		progress, done, err = f.Step(ev)
		if err != nil {
			break
		}
		if progress != nil {
			call.Progress(progress)
		}
		if done {
			break
		}
	}
	if bound.exceeded.Load() {
		err = fmt.Errorf("the remote agent's answer passed %d bytes", c.limits.MaxBytes)
	}
	if !done && f.TaskID != "" && !f.State.Terminal() {
		// The call ends before the task: its timeout, an abort, a broken
		// stream. The remote task is not left to run.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_, cerr := client.CancelTask(cctx, &a2a.TaskIDParams{ID: f.TaskID})
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = errors.New("the stream ended before the task did")
		}
		if cerr != nil {
			return nil, fmt.Errorf("remote agent %s: task %s: %w (and canceling it failed: %v)", c.agent, f.TaskID, err, cerr)
		}
		return nil, fmt.Errorf("remote agent %s: task %s canceled: %w", c.agent, f.TaskID, err)
	}
	if err == nil && !done {
		err = ctx.Err()
		if err == nil {
			err = errors.New("the stream ended without a task")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("remote agent %s at %s: %w", c.agent, c.url, err)
	}
	return c.result(f)
}

// result is the tool result of a followed task.
func (c *caller) result(f *Follow) (*agentfleet.ToolResult, error) {
	details := map[string]any{"agent": c.agent, "task_id": string(f.TaskID), "context_id": f.ContextID, "a2a_state": string(f.State)}
	switch f.State {
	case a2a.TaskStateCompleted:
		answer := f.Answer
		if answer == "" {
			answer = f.Status
		}
		return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text(answer)}, Details: details}, nil
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		text := fmt.Sprintf("The remote agent %s asks for input (%s): %s\nTo answer, call %s%s again with task_id %q, context_id %q and the answer as message.",
			c.agent, f.State, f.Status, ToolPrefix, c.agent, f.TaskID, f.ContextID)
		return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text(text)}, Details: details}, nil
	}
	msg := fmt.Sprintf("remote agent %s: task %s %s", c.agent, f.TaskID, f.State)
	if f.Status != "" {
		msg += ": " + f.Status
	}
	return nil, errors.New(msg)
}

// bounded adds the bearer token to every request and bounds every
// response body.
type bounded struct {
	token    string
	max      int64
	next     http.RoundTripper
	exceeded atomic.Bool
}

func (b *bounded) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	resp, err := b.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &limitedBody{rc: resp.Body, left: b.max, max: b.max, exceeded: &b.exceeded}
	return resp, nil
}

type limitedBody struct {
	rc        io.ReadCloser
	left, max int64
	exceeded  *atomic.Bool
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.exceeded.Store(true)
		return 0, fmt.Errorf("the remote agent's answer passed %d bytes", l.max)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.rc.Read(p)
	l.left -= int64(n)
	return n, err
}

func (l *limitedBody) Close() error { return l.rc.Close() }
