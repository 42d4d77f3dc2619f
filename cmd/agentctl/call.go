package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// parseArgs decodes the JSON arguments of call; the error quotes them.
func parseArgs(s string) (map[string]any, error) {
	var args map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&args); err != nil {
		return nil, fmt.Errorf("arguments %s are not a JSON object: %v", shorten(s, 80), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("arguments %s hold more than one JSON value", shorten(s, 80))
	}
	if args == nil {
		return nil, fmt.Errorf("arguments %s are not a JSON object", shorten(s, 80))
	}
	return args, nil
}

// call runs one tool on the fleet through the tool protocol, as the
// orchestrator would, printing progress as it comes and then the result.
// The arguments are checked against the tool's schema first, when a worker
// describes the tool.
func (m *Main) call(ctx context.Context) error {
	name := m.pos[0]
	args := map[string]any{}
	if len(m.pos) == 2 {
		args, _ = parseArgs(m.pos[1]) // checked by ParseFlags
	}
	found, err := m.discover(ctx)
	if err != nil {
		return err
	}
	def := agentfleet.ToolDef{Name: name}
	if t, ok := found[name]; ok {
		def = t.ToolDef
		schema, err := tools.CompileSchema(def.InputSchema)
		if err != nil {
			return fmt.Errorf("tool %s: %w", name, err)
		}
		if err := schema.Validate(args); err != nil {
			return fmt.Errorf("tool %s: %w", name, err)
		}
	}
	timeout := m.Timeout
	if timeout == 0 {
		timeout = def.Timeout()
	}
	if timeout == 0 {
		timeout = pipeline.DefaultTimeout
	}

	client, err := toolrpc.NewToolClient(m.conn.NATS(), toolrpc.ClientConfig{Prefix: m.subjects.Prefix})
	if err != nil {
		return err
	}
	defer client.Close()
	// A refused request would otherwise look like a worker that never
	// answered; end the call with the refusal instead.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case err := <-m.conn.Denied():
			cancel(err)
		case <-ctx.Done():
		}
	}()
	call := &toolrpc.Call{
		ID: "agentctl-" + strings.ToLower(rand.Text()[:10]), Name: name, Args: args, Timeout: timeout,
		Retryable: def.Annotations.Idempotent || def.Annotations.ReadOnly,
	}
	// Objects the call puts in the fleet's store are owned by a session of
	// its own, deleted once written out (-o).
	call.Agent, call.Session = "agentctl", call.ID
	start := time.Now()
	res, err := client.Execute(ctx, call, func(partial any) {
		if m.JSON {
			b, _ := json.Marshal(map[string]any{"progress": partial})
			fmt.Fprintf(m.Stdout, "%s\n", b)
			return
		}
		fmt.Fprintf(m.Stdout, "… %s\n", compactJSON(partial, 200))
	})
	isError := false
	if re, ok := errors.AsType[*toolrpc.ResultError](err); ok && re.Result != nil {
		res, isError, err = re.Result, true, nil
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		if ctx.Err() != nil {
			return nil // interrupted; the worker was told to stop
		}
		if errors.Is(err, toolrpc.ErrNoResponders) && len(found) > 0 {
			return fmt.Errorf("%w; the fleet serves: %s", err, strings.Join(slices.Sorted(maps.Keys(found)), ", "))
		}
		return err
	}
	if m.Output != "" && !isError {
		return m.writeFile(ctx, call, res)
	}
	if m.JSON {
		b, _ := json.Marshal(struct {
			Tool       string                 `json:"tool"`
			CallID     string                 `json:"call_id"`
			Worker     string                 `json:"worker,omitempty"`
			DurationMS float64                `json:"duration_ms"`
			IsError    bool                   `json:"is_error"`
			Result     *agentfleet.ToolResult `json:"result"`
		}{name, call.ID, res.Worker, float64(time.Since(start).Microseconds()) / 1000, isError, res})
		fmt.Fprintf(m.Stdout, "%s\n", b)
	} else if isError {
		fmt.Fprintf(m.Stderr, "error: %s\n", resultText(res))
	} else if text := resultText(res); text != "" {
		fmt.Fprintln(m.Stdout, text)
	}
	if isError {
		return exitCode(1)
	}
	return nil
}

// resultText returns the text of a result, images named.
func resultText(r *agentfleet.ToolResult) string {
	var parts []string
	for _, c := range r.Content {
		switch c.Type {
		case agentfleet.ContentText:
			parts = append(parts, c.Text)
		case agentfleet.ContentImage:
			parts = append(parts, fmt.Sprintf("(an image, %s, %d bytes of base64)", c.MIMEType, len(c.Data)))
		case agentfleet.ContentRef:
			parts = append(parts, fmt.Sprintf("(a file%s, %s, %d bytes, sha256 %s: %s)", prefixed(c.Name), c.MIMEType, c.Size, c.SHA256, c.Ref))
		}
	}
	return strings.Join(parts, "\n")
}
