package mcpbridge

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
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

// Result turns an MCP tool result into a fleet result. Text and image
// blocks are kept; audio, resource links and embedded resources become
// text blocks that say what they were (with an embedded text resource's
// text). Structured content becomes Details, under "value" when it is
// not a JSON object. isError is reported by the second return value.
func Result(r *mcp.CallToolResult) (res *agentfleet.ToolResult, isError bool) {
	res = &agentfleet.ToolResult{Content: []agentfleet.Content{}}
	for _, c := range r.Content {
		res.Content = append(res.Content, content(c))
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
	return res, r.IsError
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
