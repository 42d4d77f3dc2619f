package fleet

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// Metadata keys of a tool endpoint. The definition of a tool travels in its
// endpoint's metadata, so that `nats micro info` shows it and orchestrators
// discover it through $SRV.INFO.
const (
	MetaProtocol     = "agentfleet.protocol"
	MetaLabel        = "label"
	MetaDescription  = "description"
	MetaInputSchema  = "input_schema"
	MetaOutputSchema = "output_schema"
	MetaAnnotations  = "annotations"
	MetaParallel     = "parallel"
	MetaTimeoutMS    = "timeout_ms"
	MetaScripted     = "scripted"
)

// MetaConcurrency is the key of the service metadata (not the endpoints')
// that advertises how many calls a worker runs at once, over all its
// tools: an orchestrator keeps at most the sum over a tool's workers in
// flight.
const MetaConcurrency = "concurrency"

// MetaDirect is the service metadata key that says, when "true", that the
// worker also takes calls of each of its tools on a subject of its own,
// <prefix>.tool.<name>.<id> (id: its instance id), so that an orchestrator
// may choose it by its free slots; a worker without it is reached through
// the queue group only.
const MetaDirect = "direct"

// MetaBeat is the service metadata key (optional) that says the worker beats
// on <prefix>.fleet every so many milliseconds, so that an orchestrator that
// found it in a discovery round knows how soon its silence means it is gone.
const MetaBeat = "beat_ms"

// MetaKind is the service metadata key that says where a worker service's
// tools come from: KindBuiltin, KindScripted or KindMCP. A service without
// it is a foreign worker (KindForeign). It is what the service claims:
// discovery uses it to keep a fleet tool name from being taken over by a
// worker of a lower kind (see Rank), not as proof.
const MetaKind = "kind"

// Kinds of worker services, as MetaKind gives them.
const (
	KindBuiltin  = "builtin"
	KindScripted = "scripted"
	KindMCP      = "mcp"
	KindForeign  = "foreign"
)

// Rank orders the kinds of worker services by their claim to a tool name:
// built-in tools first, then scripted, MCP, and foreign workers (any other
// value) last. Discovery offers a tool name only as served by the workers
// of the highest rank that serve it.
func Rank(kind string) int {
	switch kind {
	case KindBuiltin:
		return 3
	case KindScripted:
		return 2
	case KindMCP:
		return 1
	}
	return 0
}

// ToolMetadata returns the endpoint metadata that describes d.
func ToolMetadata(d *agentfleet.ToolDef) map[string]string {
	md := map[string]string{
		MetaProtocol:    strconv.Itoa(wire.ProtocolVersion),
		MetaLabel:       d.Label,
		MetaDescription: d.Description,
		MetaParallel:    strconv.FormatBool(d.Parallel),
	}
	if len(d.InputSchema) > 0 {
		md[MetaInputSchema] = string(d.InputSchema)
	}
	if len(d.OutputSchema) > 0 {
		md[MetaOutputSchema] = string(d.OutputSchema)
	}
	if a, err := json.Marshal(d.Annotations); err == nil {
		md[MetaAnnotations] = string(a)
	}
	if d.TimeoutMS > 0 {
		md[MetaTimeoutMS] = strconv.FormatInt(d.TimeoutMS, 10)
	}
	if d.Scripted {
		md[MetaScripted] = "true"
	}
	return md
}

// ToolFromMetadata rebuilds the definition of the tool name from endpoint
// metadata. The error names the field that is wrong.
func ToolFromMetadata(name string, md map[string]string) (agentfleet.ToolDef, error) {
	d := agentfleet.ToolDef{Name: name, Label: md[MetaLabel], Description: md[MetaDescription]}
	if err := bus.CheckToken("tool", name); err != nil {
		return d, err
	}
	if s := md[MetaInputSchema]; s != "" {
		if !json.Valid([]byte(s)) {
			return d, fmt.Errorf("tool %s: metadata %s is not valid JSON", name, MetaInputSchema)
		}
		d.InputSchema = json.RawMessage(s)
	}
	if s := md[MetaOutputSchema]; s != "" {
		if !json.Valid([]byte(s)) {
			return d, fmt.Errorf("tool %s: metadata %s is not valid JSON", name, MetaOutputSchema)
		}
		d.OutputSchema = json.RawMessage(s)
	}
	if s := md[MetaAnnotations]; s != "" {
		if err := json.Unmarshal([]byte(s), &d.Annotations); err != nil {
			return d, fmt.Errorf("tool %s: metadata %s: %v", name, MetaAnnotations, err)
		}
	}
	if s := md[MetaParallel]; s != "" {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return d, fmt.Errorf("tool %s: metadata %s: %q is not a boolean", name, MetaParallel, s)
		}
		d.Parallel = v
	}
	if s := md[MetaTimeoutMS]; s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return d, fmt.Errorf("tool %s: metadata %s: %q is not a number of milliseconds", name, MetaTimeoutMS, s)
		}
		d.TimeoutMS = v
	}
	d.Scripted = md[MetaScripted] == "true"
	return d, nil
}
