package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of what a bridge takes from one MCP server's tools/list.
const (
	// DefaultMaxTools is the default of Limits.MaxTools: the tools served
	// of one server. The listing stops there; the rest are not served.
	DefaultMaxTools = 256
	// infoHeadroom is what the service's info takes besides its tools'
	// metadata: its name, id, version, metadata and JSON framing.
	infoHeadroom = 8 << 10
	// endpointOverhead is what one endpoint takes in the info besides its
	// metadata: its name twice (name, subject), the queue group, keys.
	endpointOverhead = 256
)

// Limits bound the tool list of one MCP server; the zero value of a field
// means its default.
type Limits struct {
	// MaxTools bounds the tools served; default DefaultMaxTools.
	MaxTools int
	// Tool bounds each tool's description and schemas; default
	// bus.MaxToolDescription, bus.MaxToolSchema, bus.MaxSchemaDepth.
	Tool fleet.ToolBounds
	// InfoBytes bounds the metadata of all the tools served, so that the
	// micro service's $SRV.INFO answer fits in one NATS message; default
	// the connection's max payload (1 MiB unless the server says
	// otherwise), less a headroom of 8 KiB.
	InfoBytes int
}

func (l Limits) withDefaults(maxPayload int64) Limits {
	if l.MaxTools <= 0 {
		l.MaxTools = DefaultMaxTools
	}
	if l.InfoBytes <= 0 {
		if maxPayload <= 0 {
			maxPayload = 1 << 20
		}
		l.InfoBytes = max(int(maxPayload)-infoHeadroom, infoHeadroom)
	}
	return l
}

// refusal is a listed tool that is not served: its MCP name, the bound it
// broke ("" when it broke none, such as a name that is no subject token),
// and why.
type refusal struct {
	tool, bound string
	err         error
}

// admitted is a listed tool that is served: its fleet definition and its
// MCP name.
type admitted struct {
	def     agentfleet.ToolDef
	mcpName string
}

// admit decides which of the listed tools are served, in the order the
// server listed them: each becomes prefix+name (ToolDef) within lim, and
// is refused when that breaks a bound, when the name is reserved, when
// the server lists it twice, when the tools before it already fill the
// service's info, or when its schema does not compile; the schema is
// compiled last, so that what is compiled in all is within the service's
// info. more says that the server listed more than these, which
// lim.MaxTools cut off. lim must have its defaults. When ctx ends, admit
// returns ctx's error between two tools.
func admit(ctx context.Context, prefix string, listed []*mcp.Tool, more bool, lim Limits, reserved map[string]bool, timeout int64) ([]admitted, []refusal, error) {
	var (
		kept    []admitted
		refused []refusal
		seen    = map[string]bool{}
		info    = 0
	)
	for _, t := range listed {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		d, err := toolDef(prefix, t, lim.Tool)
		if err != nil {
			bound := ""
			if be, ok := errors.AsType[*fleet.BoundError](err); ok {
				bound = be.Bound
			}
			refused = append(refused, refusal{t.Name, bound, err})
			continue
		}
		d.TimeoutMS = timeout
		switch {
		case reserved[d.Name]:
			refused = append(refused, refusal{t.Name, "", fmt.Errorf("MCP tool %q: %s is the name of a fleet tool (built-in or of this worker)", t.Name, d.Name)})
			continue
		case seen[d.Name]:
			refused = append(refused, refusal{t.Name, "", fmt.Errorf("MCP tool %q: the server lists it twice", t.Name)})
			continue
		}
		cost := infoCost(&d)
		if info+cost > lim.InfoBytes {
			refused = append(refused, refusal{t.Name, "service info", fmt.Errorf("MCP tool %q: its %d bytes of metadata would take the service's info past %d bytes, the NATS message bound", t.Name, cost, lim.InfoBytes)})
			continue
		}
		if err := compile(t.Name, &d); err != nil {
			refused = append(refused, refusal{t.Name, "", err})
			continue
		}
		info += cost
		seen[d.Name] = true
		kept = append(kept, admitted{d, t.Name})
	}
	if more {
		refused = append(refused, refusal{"", "tool count", fmt.Errorf("the server lists more than %d tools; the first %d are considered, the rest are not served", lim.MaxTools, lim.MaxTools)})
	}
	return kept, refused, nil
}

// infoCost is what d takes in its service's $SRV.INFO answer: its
// metadata as JSON, escapes included, and the endpoint around it.
func infoCost(d *agentfleet.ToolDef) int {
	b, _ := json.Marshal(fleet.ToolMetadata(d))
	return len(b) + 2*len(d.Name) + endpointOverhead
}
