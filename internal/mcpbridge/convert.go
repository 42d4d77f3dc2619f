package mcpbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolDef turns an MCP tool into the definition of the fleet tool that
// serves it, named prefix+t.Name. It fails, saying why, when that name is
// not a fleet tool name (a single NATS subject token: letters, digits, '-'
// and '_', at most 128 bytes), the definition breaks the default
// bus.ToolBounds (a *bus.BoundError), or the input schema does not
// compile.
//
// The hints map to annotations with MCP's defaults for missing ones: a
// tool is read-only only when readOnlyHint says so; a tool that is not
// read-only is destructive unless destructiveHint is false; idempotent
// only when idempotentHint says so. MCP's openWorldHint has no
// counterpart. Read-only tools may run in parallel with the others of a
// batch.
func ToolDef(prefix string, t *mcp.Tool) (agentfleet.ToolDef, error) {
	d, err := toolDef(prefix, t, fleet.ToolBounds{})
	if err != nil {
		return d, err
	}
	return d, compile(t.Name, &d)
}

// compile fails when d's input schema does not compile. It takes time
// that grows faster than the schema (0.1 s for 64 KiB, 3.6 s for 1 MiB,
// minutes for 10 MB of properties), which is why the schema's bounds are
// checked before.
func compile(mcpName string, d *agentfleet.ToolDef) error {
	if _, err := tools.CompileSchema(d.InputSchema); err != nil {
		return fmt.Errorf("MCP tool %q: %w", mcpName, err)
	}
	return nil
}

// toolDef is ToolDef within bounds, without compiling the schema.
func toolDef(prefix string, t *mcp.Tool, bounds fleet.ToolBounds) (agentfleet.ToolDef, error) {
	name := prefix + t.Name
	if err := bus.CheckToken("tool", name); err != nil {
		return agentfleet.ToolDef{}, fmt.Errorf("MCP tool %q: %w", t.Name, err)
	}
	d := agentfleet.ToolDef{Name: name, Label: t.Title, Description: t.Description}
	var err error
	if d.InputSchema, err = rawSchema(t.InputSchema); err != nil {
		return agentfleet.ToolDef{}, fmt.Errorf("MCP tool %q: inputSchema: %w", t.Name, err)
	}
	if d.InputSchema == nil {
		d.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if d.OutputSchema, err = rawSchema(t.OutputSchema); err != nil {
		return agentfleet.ToolDef{}, fmt.Errorf("MCP tool %q: outputSchema: %w", t.Name, err)
	}
	if err := bounds.Check(&d); err != nil {
		return agentfleet.ToolDef{}, fmt.Errorf("MCP tool %q: %w", t.Name, err)
	}
	d.Annotations = Annotations(t.Annotations)
	d.Parallel = d.Annotations.ReadOnly
	if d.Label == "" && t.Annotations != nil {
		d.Label = t.Annotations.Title
	}
	return d, nil
}

// Annotations maps MCP's tool hints to the fleet's annotations, with
// MCP's defaults for the missing ones (see ToolDef).
func Annotations(a *mcp.ToolAnnotations) agentfleet.Annotations {
	if a == nil {
		return agentfleet.Annotations{Destructive: true}
	}
	out := agentfleet.Annotations{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint}
	if !a.ReadOnlyHint {
		out.Destructive = a.DestructiveHint == nil || *a.DestructiveHint
	}
	return out
}

func rawSchema(s any) (json.RawMessage, error) {
	switch s := s.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return s, nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// Result turns an MCP tool result into a fleet result; it is ResultIn
// outside any call, with no object store.
func Result(r *mcp.CallToolResult) (res *agentfleet.ToolResult, isError bool) {
	res, isError, _ = ResultIn(context.Background(), r)
	return res, isError
}

// ResultIn turns an MCP tool result into a fleet result, in the context of
// the call. Text and image blocks are kept (Offload puts large ones in the
// object store); audio and embedded binary resources go to the call's
// object store as ref blocks (objref.Put) when it has one, and otherwise,
// like resource links, become text blocks that say what they were; an
// embedded text resource becomes its text. Structured content becomes
// Details, under "value" when it is not a JSON object. isError is
// reported by the second return value; the error is that of a file over a
// limit of the object store.
func ResultIn(ctx context.Context, r *mcp.CallToolResult) (res *agentfleet.ToolResult, isError bool, err error) {
	res = &agentfleet.ToolResult{Content: []agentfleet.Content{}}
	for i, c := range r.Content {
		b, err := file(ctx, c)
		if err != nil {
			return nil, false, fmt.Errorf("content[%d]: %w", i, err)
		}
		res.Content = append(res.Content, b)
	}
	if r.StructuredContent != nil {
		var v any = r.StructuredContent
		if raw, ok := v.(json.RawMessage); ok {
			_ = json.Unmarshal(raw, &v)
		}
		if m, ok := v.(map[string]any); ok {
			res.Details = m
		} else {
			res.Details = map[string]any{"value": v}
		}
		if len(res.Content) == 0 {
			// A client that reads only content still sees the data.
			b, _ := json.Marshal(v)
			res.Content = append(res.Content, agentfleet.Text(string(b)))
		}
	}
	return res, r.IsError, nil
}

// file returns c as a ref block when it holds bytes that are no image and
// the call has an object store; else as content does.
func file(ctx context.Context, c mcp.Content) (agentfleet.Content, error) {
	var data []byte
	var mimeType, name string
	switch c := c.(type) {
	case *mcp.AudioContent:
		data, mimeType = c.Data, c.MIMEType
	case *mcp.EmbeddedResource:
		if c.Resource != nil && c.Resource.Text == "" && len(c.Resource.Blob) > 0 {
			data, mimeType, name = c.Resource.Blob, c.Resource.MIMEType, path.Base(c.Resource.URI)
		}
	}
	if data == nil {
		return content(c), nil
	}
	ref, err := objref.Put(ctx, bytes.NewReader(data), mimeType, name)
	if errors.Is(err, objref.ErrNoStore) {
		return content(c), nil
	}
	return ref, err
}

func content(c mcp.Content) agentfleet.Content {
	switch c := c.(type) {
	case *mcp.TextContent:
		return agentfleet.Text(c.Text)
	case *mcp.ImageContent:
		return agentfleet.Image(base64.StdEncoding.EncodeToString(c.Data), c.MIMEType)
	case *mcp.AudioContent:
		return agentfleet.Text(fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
	case *mcp.ResourceLink:
		return agentfleet.Text(fmt.Sprintf("[resource %s %s]", c.URI, c.Name))
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return agentfleet.Text("[resource]")
		}
		if c.Resource.Text != "" {
			return agentfleet.Text(c.Resource.Text)
		}
		return agentfleet.Text(fmt.Sprintf("[resource %s %s, %d bytes]", c.Resource.URI, c.Resource.MIMEType, len(c.Resource.Blob)))
	default:
		b, _ := json.Marshal(c)
		return agentfleet.Text(string(b))
	}
}
