package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
)

// Names of the tools that change the fleet's scripted tools.
const (
	WriteToolName  = "write_tool"
	DeleteToolName = "delete_tool"
)

// reserved are names a scripted tool may never take: the orchestrator's own
// tools.
var reserved = []string{WriteToolName, DeleteToolName, "list_tools"}

// OrchestratorTools returns the names of the orchestrator's own tools,
// which no scripted tool, and no MCP server's tool, may take.
func OrchestratorTools() []string { return append([]string(nil), reserved...) }

// writeToolSchema is write_tool's input schema: Definition's fields.
const writeToolSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,128}$", "description": "Name of the new tool: letters, digits, '-' and '_'. It must not be taken by another tool (see list_tools)."},
    "label": {"type": "string", "description": "Human-readable title of the tool."},
    "description": {"type": "string", "description": "What the tool does, for the model to choose it."},
    "input_schema": {"type": "object", "description": "JSON Schema of the tool's arguments, of type object, e.g. {\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}."},
    "code": {"type": "string", "description": "Starlark (a Python dialect) script that defines execute(args). args is a dict of the validated arguments. execute returns a string (the text result) or a dict {\"content\": string or list of {\"type\":\"text\",\"text\":...} blocks, \"details\": dict, \"terminate\": bool}. fail(msg) ends the call with an error result. Builtins: json.encode/json.decode, math, time.now() (RFC 3339, UTC), time.unix(), progress(value) for partial results, call_tool(name, args) which calls another tool of the fleet and returns its text (call_tool(name, args, full=True) returns a dict with text, content, details and is_error instead of failing). There is no file, network, process or environment access, no load(), no recursion; every call has a limit on steps and time."},
    "validate_code": {"type": "string", "description": "Optional Starlark script that defines validate(args), returning None if the arguments are fine or a string saying what is wrong. It replaces the schema validation."},
    "prepare_code": {"type": "string", "description": "Optional Starlark script that defines prepare(args), returning the arguments (a dict) to validate and use, e.g. with defaults filled in."},
    "parallel": {"type": "boolean", "description": "Whether the tool may run in parallel with other tools of a batch. Default false."},
    "annotations": {
      "type": "object",
      "properties": {
        "read_only": {"type": "boolean"},
        "idempotent": {"type": "boolean"},
        "destructive": {"type": "boolean"}
      },
      "additionalProperties": false,
      "description": "Hints about the tool's behaviour: read_only, idempotent, destructive."
    },
    "replace": {"type": "boolean", "description": "Replace the scripted tool of the same name. Only scripted tools can be replaced. Default false."}
  },
  "required": ["name", "label", "description", "input_schema", "code"],
  "additionalProperties": false
}`

// WriteTool returns the write_tool tool, served by the orchestrator: it
// checks a Definition against the fleet and the sandbox (see Write) and
// stores it, from where every worker that runs scripts serves it within a
// second. fleet returns the tools the fleet and the orchestrator serve now,
// for name collisions; dry runs the definition once (see DryRunner) before
// it is stored.
//
// Every failure returns as an error whose text says what to fix, which the
// pipeline turns into an error result for the model.
func WriteTool(store Store, fleet func() []agentfleet.ToolDef, dry DryRunner) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        WriteToolName,
			Label:       "Write Tool",
			Description: "Create a new tool, or replace a scripted one, from a Starlark script. The tool is checked, run once against sample arguments, stored, and served by the whole fleet within a second; call it from the next turn on. Use list_tools first to avoid name collisions.",
			InputSchema: json.RawMessage(writeToolSchema),
			Annotations: agentfleet.Annotations{Destructive: true},
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			def, err := DecodeDefinition(call.Arguments)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", WriteToolName, err)
			}
			w, err := Write(ctx, store, fleet, dry, def)
			if err != nil {
				return nil, err
			}
			text := fmt.Sprintf("Tool %s written (revision %d); it is available to the fleet within a second.", def.Name, w.Revision)
			if w.Note != "" {
				text += "\nNote: " + w.Note
			}
			return &agentfleet.ToolResult{
				Content: []agentfleet.Content{agentfleet.Text(text)},
				Details: map[string]any{"name": def.Name, "revision": w.Revision, "replaced": w.Replaced},
			}, nil
		}),
	}
}

// DecodeDefinition reads a Definition from a tool call's arguments (or any
// JSON-shaped map). An input_schema given as a string holding JSON is
// accepted too. Revision and Updated are cleared: they are the store's.
func DecodeDefinition(args map[string]any) (*Definition, error) {
	if s, ok := args["input_schema"].(string); ok {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("input_schema is a string that is not JSON: %v", err)
		}
		args = maps.Clone(args)
		args["input_schema"] = v
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("arguments: %v", err)
	}
	var def Definition
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&def); err != nil {
		return nil, fmt.Errorf("arguments do not form a tool definition: %v", err)
	}
	def.Revision, def.Updated = 0, time.Time{}
	return &def, nil
}

// Written is the outcome of Write.
type Written struct {
	// Revision is the store's revision of the new definition.
	Revision uint64
	// Replaced says a scripted tool of the same name was replaced.
	Replaced bool
	// Note, when set, says why the dry run could not exercise the whole
	// script (see ErrDryRunIncomplete).
	Note string
}

// Write does what write_tool does, for def: the name must be free, or taken
// by a scripted tool and def.Replace set; def must pass Check and the dry
// run of dry; then it is stored, replacing exactly the revision
// that was checked. The error says what to fix. agentctl's import can use
// it too.
func Write(ctx context.Context, store Store, fleet func() []agentfleet.ToolDef, dry DryRunner, def *Definition) (*Written, error) {
	if err := checkName(def.Name); err != nil {
		return nil, fmt.Errorf("%s: tool %w", WriteToolName, err)
	}
	for _, r := range reserved {
		if def.Name == r {
			return nil, fmt.Errorf("%s: the name %s is taken by a tool of the orchestrator; choose another name", WriteToolName, def.Name)
		}
	}
	existing, err := store.Get(ctx, def.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		existing = nil
	case err != nil:
		return nil, fmt.Errorf("%s: reading the tool store: %w", WriteToolName, err)
	}
	if existing == nil {
		// A scripted tool the fleet still serves but the store no longer
		// holds was just deleted: its workers drop it within a beat, so
		// its name is free.
		if d, ok := findDef(fleet, def.Name); ok && !d.Scripted {
			return nil, fmt.Errorf("%s: a tool named %s already exists (%s) and is not a scripted tool, so it cannot be replaced; choose another name", WriteToolName, def.Name, summary(d))
		}
	} else if !def.Replace {
		return nil, fmt.Errorf("%s: a scripted tool named %s already exists (revision %d: %s); set replace to true to replace it, or choose another name", WriteToolName, def.Name, existing.Revision, summary(existing.ToolDef()))
	}
	// The dry run does the checks too: compiling a script runs its
	// top-level code, so no part of def may run here but in the runner.
	w := &Written{Replaced: existing != nil}
	if err := dry.DryRun(ctx, def); err != nil {
		if !errors.Is(err, ErrDryRunIncomplete) {
			return nil, err
		}
		w.Note = strings.TrimPrefix(err.Error(), def.Name+": ")
	}
	stored := *def
	stored.Replace = false
	stored.Revision = 0
	if existing != nil {
		stored.Revision = existing.Revision
	}
	w.Revision, err = store.Put(ctx, &stored)
	switch {
	case errors.Is(err, ErrExists):
		return nil, fmt.Errorf("%s: a scripted tool named %s was written by someone else just now; look at it with list_tools and set replace to true to replace it", WriteToolName, def.Name)
	case errors.Is(err, ErrConflict):
		return nil, fmt.Errorf("%s: the scripted tool %s was changed by someone else just now; write it again to replace the new version", WriteToolName, def.Name)
	case err != nil:
		return nil, fmt.Errorf("%s: storing %s: %w", WriteToolName, def.Name, err)
	}
	return w, nil
}

// DeleteTool returns the delete_tool tool, served by the orchestrator: it
// removes a scripted tool from the store, and so from every worker within a
// second. Only scripted tools can be deleted; earlier versions stay in the
// store's history.
func DeleteTool(store Store, fleet func() []agentfleet.ToolDef) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        DeleteToolName,
			Label:       "Delete Tool",
			Description: "Delete a scripted tool (one written with write_tool). The fleet stops serving it within a second.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","description":"Name of the scripted tool to delete."}},"required":["name"],"additionalProperties":false}`),
			Annotations: agentfleet.Annotations{Destructive: true, Idempotent: true},
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			name, _ := call.Arguments["name"].(string)
			if err := checkName(name); err != nil {
				return nil, fmt.Errorf("%s: tool %w", DeleteToolName, err)
			}
			existing, err := store.Get(ctx, name)
			if errors.Is(err, ErrNotFound) {
				if d, ok := findDef(fleet, name); ok {
					return nil, fmt.Errorf("%s: tool %s (%s) is not a scripted tool; only tools written with write_tool can be deleted", DeleteToolName, name, summary(d))
				}
				return nil, fmt.Errorf("%s: there is no scripted tool named %s", DeleteToolName, name)
			}
			if err != nil {
				return nil, fmt.Errorf("%s: reading the tool store: %w", DeleteToolName, err)
			}
			if err := store.Delete(ctx, name); err != nil && !errors.Is(err, ErrNotFound) {
				return nil, fmt.Errorf("%s: deleting %s: %w", DeleteToolName, name, err)
			}
			text := fmt.Sprintf("Tool %s deleted (its last revision was %d); the fleet stops serving it within a second.", name, existing.Revision)
			return &agentfleet.ToolResult{
				Content: []agentfleet.Content{agentfleet.Text(text)},
				Details: map[string]any{"name": name, "revision": existing.Revision},
			}, nil
		}),
	}
}

func findDef(fleet func() []agentfleet.ToolDef, name string) (agentfleet.ToolDef, bool) {
	if fleet == nil {
		return agentfleet.ToolDef{}, false
	}
	for _, d := range fleet() {
		if d.Name == name {
			return d, true
		}
	}
	return agentfleet.ToolDef{}, false
}

// summary describes a tool in a few words for messages.
func summary(d agentfleet.ToolDef) string {
	s := d.Label
	if d.Description != "" {
		if s != "" {
			s += ": "
		}
		s += d.Description
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	if s == "" {
		s = strconv.Quote(d.Name)
	}
	return s
}
