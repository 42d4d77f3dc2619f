package fleet

import (
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// Bounds of one tool definition as the fleet takes it from a source it does
// not control: a worker's endpoint metadata in discovery, or an MCP
// server's tools/list. A definition that breaks one is dropped, with a log
// line naming the tool and the bound; the other tools of its source are
// still used.
const (
	// MaxToolDescription bounds a tool's description, in bytes.
	MaxToolDescription = 16 << 10
	// MaxToolSchema bounds a tool's input schema, and its output schema,
	// in bytes each.
	MaxToolSchema = 64 << 10
	// MaxSchemaDepth bounds the nesting of objects and arrays in a tool's
	// schema, as MaxDecodeDepth does in a wire message.
	MaxSchemaDepth = wire.MaxDecodeDepth
	// MaxWorkerTools bounds the tools the fleet takes from one worker
	// service; the endpoints beyond it, in the order of its info, are
	// dropped.
	MaxWorkerTools = 1024
)

// ToolBounds are the bounds a tool definition must keep; the zero value
// of a field means its default above.
type ToolBounds struct {
	Description, Schema, Depth int
}

// withDefaults fills the zero fields.
func (b ToolBounds) withDefaults() ToolBounds {
	if b.Description <= 0 {
		b.Description = MaxToolDescription
	}
	if b.Schema <= 0 {
		b.Schema = MaxToolSchema
	}
	if b.Depth <= 0 {
		b.Depth = MaxSchemaDepth
	}
	return b
}

// BoundError says which bound a tool definition broke.
type BoundError struct {
	Tool string
	// Bound names it: "description", "input_schema", "output_schema",
	// "input_schema depth", "output_schema depth" or "tool count".
	Bound       string
	Size, Limit int
}

func (e *BoundError) Error() string {
	switch e.Bound {
	case "tool count":
		return fmt.Sprintf("tool %s: over the bound of %d tools of one source", e.Tool, e.Limit)
	case "input_schema depth", "output_schema depth":
		return fmt.Sprintf("tool %s: %s nests deeper than %d levels", e.Tool, e.Bound[:len(e.Bound)-len(" depth")], e.Limit)
	}
	return fmt.Sprintf("tool %s: %s is %d bytes, over the bound of %d", e.Tool, e.Bound, e.Size, e.Limit)
}

// Check returns a *BoundError for the first bound d breaks, nil when it
// keeps them all. It reads each schema once, without decoding it.
func (b ToolBounds) Check(d *agentfleet.ToolDef) error {
	b = b.withDefaults()
	if n := len(d.Description); n > b.Description {
		return &BoundError{d.Name, "description", n, b.Description}
	}
	for _, s := range []struct {
		what string
		raw  []byte
	}{{MetaInputSchema, d.InputSchema}, {MetaOutputSchema, d.OutputSchema}} {
		if n := len(s.raw); n > b.Schema {
			return &BoundError{d.Name, s.what, n, b.Schema}
		}
		if n := JSONDepth(s.raw); n > b.Depth {
			return &BoundError{d.Name, s.what + " depth", n, b.Depth}
		}
	}
	return nil
}

// JSONDepth returns the deepest nesting of objects and arrays in the JSON
// text raw (0 for a scalar, 1 for {} or []), without decoding it; for text
// that is not JSON, it counts the brackets outside strings all the same.
func JSONDepth(raw []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
