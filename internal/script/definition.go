// Package script holds the scripted tools of the fleet: tools that an agent
// writes at run time with write_tool, in Starlark, and that every worker
// started with scripts serves within a second, with no build and no restart.
//
// A Definition is the data of one scripted tool (spec section 15's writeTool
// input, with Starlark in place of Julia). Check says whether it is sound,
// New turns it into an agentfleet.Tool whose handler runs the script in a
// sandbox, DryRun runs it once against arguments made up from its schema,
// and WriteTool and DeleteTool are the tools the orchestrator serves so that
// the model can change the fleet's tool set. Definitions live in a Store,
// which package bus implements over a JetStream KV bucket.
//
// The sandbox: scripts cannot load other files, and the only names they see
// are Starlark's universe (without print's output, which goes to Env.Print)
// and the builtins json, math, time, progress, call_tool and fail. Every call
// runs in a fresh thread with a limit on its execution steps, on its wall
// time and on the size of its result. Recursion is not allowed, so that a
// script cannot exhaust the Go stack. Starlark has no memory limit: one step
// may allocate up to about a gigabyte (its own bound for repeated strings and
// lists), so run scripts in a process whose memory is bounded by the
// operating system when the writers of scripts are not trusted.
//
// This is the only package that imports go.starlark.net.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/agentfleet/agentfleet"
)

// Definition is a scripted tool as write_tool takes it and as a Store keeps
// it. Its JSON form is write_tool's input.
type Definition struct {
	// Name is the tool's name: one NATS subject token of letters, digits,
	// '-' and '_', at most 128 bytes.
	Name string `json:"name"`
	// Label is a human-readable title.
	Label string `json:"label"`
	// Description is shown to the model to choose the tool.
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the arguments; its type must be
	// "object".
	InputSchema json.RawMessage `json:"input_schema"`
	// Code is the Starlark script that defines execute(args).
	Code string `json:"code"`
	// ValidateCode, optional, defines validate(args), which returns None
	// when the arguments are acceptable and an error string otherwise. It
	// replaces the validation against InputSchema (spec
	// validateRequiredArgs).
	ValidateCode string `json:"validate_code,omitempty"`
	// PrepareCode, optional, defines prepare(args), which returns the
	// arguments to use, as a dict, before validation (spec
	// prepareArguments).
	PrepareCode string `json:"prepare_code,omitempty"`
	// Parallel says the tool may run concurrently with the others of its
	// batch. Default false.
	Parallel bool `json:"parallel,omitempty"`
	// Annotations are the hints of the tool's behaviour.
	Annotations agentfleet.Annotations `json:"annotations"`
	// Replace, meaningful only for write_tool, allows replacing a scripted
	// tool of the same name. A Store does not keep it.
	Replace bool `json:"replace,omitempty"`

	// Revision is the store's revision of the definition. A Store sets it
	// on the definitions it returns; Put reads it as the revision to
	// replace (zero: the tool must not exist yet).
	Revision uint64 `json:"revision,omitempty"`
	// Updated is when the definition was stored; set by a Store.
	Updated time.Time `json:"updated,omitzero"`
}

// ToolDef returns the definition of the tool as the model and the pipeline
// see it.
func (d *Definition) ToolDef() agentfleet.ToolDef {
	return agentfleet.ToolDef{
		Name:        d.Name,
		Label:       d.Label,
		Description: d.Description,
		InputSchema: d.InputSchema,
		Annotations: d.Annotations,
		Parallel:    d.Parallel,
		Scripted:    true,
	}
}

// Store keeps the definitions of the scripted tools of a fleet. A name is
// scripted exactly when the store holds it. Implementations must be safe for
// concurrent use.
type Store interface {
	// Put stores def under def.Name and returns its new revision. When
	// def.Revision is zero the tool must not exist (else the error wraps
	// ErrExists); otherwise the stored revision must be def.Revision (else
	// the error wraps ErrConflict).
	Put(ctx context.Context, def *Definition) (revision uint64, err error)
	// Get returns the current definition of name; the error wraps
	// ErrNotFound when there is none.
	Get(ctx context.Context, name string) (*Definition, error)
	// Delete removes name; the error wraps ErrNotFound when there is none.
	// Earlier revisions may stay in the store's history.
	Delete(ctx context.Context, name string) error
	// List returns the current definitions, sorted by name.
	List(ctx context.Context) ([]*Definition, error)
}

// Errors of a Store, compared with errors.Is.
var (
	ErrNotFound = errors.New("no scripted tool of that name")
	ErrExists   = errors.New("a scripted tool of that name exists")
	ErrConflict = errors.New("the scripted tool was changed by someone else meanwhile")
)

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// checkName says why name cannot name a tool; the rule is bus.CheckToken's,
// repeated here because package bus imports this one.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("name is empty")
	case len(name) > 128:
		return fmt.Errorf("name is %d bytes long, the limit is 128", len(name))
	case !tokenRE.MatchString(name):
		return fmt.Errorf("name %q may hold only letters, digits, '-' and '_'", name)
	}
	return nil
}
