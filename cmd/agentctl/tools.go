package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/client"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
)

// defaultDiscoveryWait bounds the wait for the first worker to answer
// $SRV.INFO when --timeout is not given.
const defaultDiscoveryWait = 2 * time.Second

// discover returns the fleet's tools, and an error when the server refuses
// the discovery request.
func (m *Main) discover(ctx context.Context) (map[string]*fleet.FleetTool, error) {
	wait := m.Timeout
	if wait == 0 {
		wait = defaultDiscoveryWait
	}
	found, err := fleet.Discover(ctx, m.conn.NATS(), m.subjects, wait)
	if err != nil {
		return nil, err
	}
	if err := m.conn.CheckDenied("$SRV.INFO"); err != nil {
		return nil, err
	}
	return found, nil
}

// jsonTool is the --json form of a fleet tool: its definition and the ids
// of the workers that serve it.
type jsonTool struct {
	agentfleet.ToolDef
	Workers []string `json:"workers"`
}

// tools lists the tools of the fleet with their argument schemas, or,
// given an agent, the tools that agent sees.
func (m *Main) tools(ctx context.Context) error {
	if len(m.pos) == 1 {
		return m.agentTools(ctx, m.pos[0])
	}
	found, err := m.discover(ctx)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return nil // interrupted
	}
	names := slices.Sorted(maps.Keys(found))
	if m.JSON {
		out := make([]jsonTool, 0, len(names))
		for _, n := range names {
			out = append(out, jsonTool{ToolDef: found[n].ToolDef, Workers: found[n].Workers})
		}
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(names) == 0 {
		return fmt.Errorf("no tool worker of prefix %q answered $SRV.INFO: is a toolworker (or orchestrator --workers) running on this NATS server?", m.subjects.Prefix)
	}
	for i, n := range names {
		if i > 0 {
			fmt.Fprintln(m.Stdout)
		}
		writeTool(m.Stdout, found[n])
	}
	return nil
}

// defaultAgentToolsWait bounds the wait for the orchestrator's list of an
// agent's tools when --timeout is not given.
const defaultAgentToolsWait = 5 * time.Second

// agentTools lists the tools agent sees, as its orchestrator answers on
// <prefix>.ask.<agent> (no session): the fleet's tools its profile allows and
// the orchestrator's own, in the order the model gets them.
func (m *Main) agentTools(ctx context.Context, agent string) error {
	reply, err := m.requestAgentTools(ctx, agent)
	if errors.Is(err, client.ErrInterrupted) {
		return nil
	}
	if err != nil {
		return err
	}
	if reply.Error != "" {
		return fmt.Errorf("the orchestrator refused: %s", reply.Error)
	}
	if m.JSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reply.Tools)
	}
	for i := range reply.Tools {
		if i > 0 {
			fmt.Fprintln(m.Stdout)
		}
		writeTool(m.Stdout, &fleet.FleetTool{ToolDef: reply.Tools[i]})
	}
	return nil
}

// agentToolsReply is an orchestrator's answer on an agent's tools subject.
type agentToolsReply struct {
	Tools []agentfleet.ToolDef `json:"tools"`
	Error string               `json:"error"`
}

// requestAgentTools asks an orchestrator for the tools agent sees; a
// refusal (an unknown agent) is the reply's Error.
func (m *Main) requestAgentTools(ctx context.Context, agent string) (*agentToolsReply, error) {
	subject := m.subjects.AgentTools(agent)
	wait := m.Timeout
	if wait == 0 {
		wait = defaultAgentToolsWait
	}
	data, err := m.conn.Request(ctx, subject, nil, wait)
	if err != nil {
		return nil, err
	}
	var reply agentToolsReply
	if err := json.Unmarshal(data, &reply); err != nil {
		return nil, fmt.Errorf("the answer on %s is not a list of tools: %w", subject, err)
	}
	return &reply, nil
}

// writeTool writes one tool as readable text: name, label and traits,
// description, and its arguments from the input schema.
func writeTool(w io.Writer, t *fleet.FleetTool) {
	head := t.Name
	if t.Label != "" {
		head += " — " + t.Label
	}
	var traits []string
	if t.Parallel {
		traits = append(traits, "parallel")
	}
	if t.Annotations.ReadOnly {
		traits = append(traits, "read-only")
	}
	if t.Annotations.Idempotent {
		traits = append(traits, "idempotent")
	}
	if t.Annotations.Destructive {
		traits = append(traits, "destructive")
	}
	if t.TimeoutMS > 0 {
		traits = append(traits, "timeout "+t.Timeout().String())
	}
	if t.Workers != nil { // nil for an agent's tools, which say no workers
		traits = append(traits, plural(len(t.Workers), "worker"))
	}
	if len(traits) > 0 {
		head += "  [" + strings.Join(traits, ", ") + "]"
	}
	fmt.Fprintln(w, head)
	if t.Description != "" {
		fmt.Fprintf(w, "  %s\n", t.Description)
	}
	writeSchema(w, t.InputSchema)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// writeSchema writes the arguments that a JSON Schema of an object
// describes, one per line, the required ones first. A schema that is not a
// plain object of properties is written as it is.
func writeSchema(w io.Writer, raw json.RawMessage) {
	if len(bytes.TrimSpace(raw)) == 0 {
		fmt.Fprintln(w, "  arguments: any JSON object")
		return
	}
	var s struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" && s.Type != nil {
		fmt.Fprintf(w, "  arguments (JSON Schema): %s\n", compactRaw(raw))
		return
	}
	if len(s.Properties) == 0 {
		fmt.Fprintln(w, "  arguments: none")
		return
	}
	fmt.Fprintln(w, "  arguments:")
	var order []string
	for _, name := range s.Required {
		if _, ok := s.Properties[name]; ok && !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	width := 0
	for _, name := range order {
		width = max(width, len(name))
	}
	for _, name := range order {
		desc, about := describeProperty(s.Properties[name], slices.Contains(s.Required, name))
		if about != "" {
			desc += " — " + about
		}
		fmt.Fprintf(w, "    %-*s  %s\n", width, name, desc)
	}
}

// describeProperty returns the type, whether it is required, and the
// constraints of one property of a schema, and its description.
func describeProperty(raw json.RawMessage, required bool) (desc, about string) {
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		return compactRaw(raw), ""
	}
	desc = typeName(p["type"])
	if desc == "array" {
		if items, ok := p["items"].(map[string]any); ok {
			if t := typeName(items["type"]); t != "any" {
				desc = "array of " + t
			}
		}
	}
	if f, ok := p["format"].(string); ok {
		desc += " (" + f + ")"
	}
	if required {
		desc += ", required"
	}
	if enum, ok := p["enum"].([]any); ok {
		vals := make([]string, len(enum))
		for i, v := range enum {
			vals[i] = jsonValue(v)
		}
		desc += ", one of " + strings.Join(vals, ", ")
	}
	lo, hasLo := p["minimum"]
	hi, hasHi := p["maximum"]
	switch {
	case hasLo && hasHi:
		desc += ", " + jsonValue(lo) + " to " + jsonValue(hi)
	case hasLo:
		desc += ", at least " + jsonValue(lo)
	case hasHi:
		desc += ", at most " + jsonValue(hi)
	}
	if d, ok := p["default"]; ok {
		desc += ", default " + jsonValue(d)
	}
	about, _ = p["description"].(string)
	return desc, about
}

// jsonValue returns v in JSON: 1048576, not 1.048576e+06.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func typeName(t any) string {
	switch t := t.(type) {
	case string:
		return t
	case []any:
		names := make([]string, 0, len(t))
		for _, n := range t {
			names = append(names, fmt.Sprint(n))
		}
		return strings.Join(names, " or ")
	}
	return "any"
}

func compactRaw(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
