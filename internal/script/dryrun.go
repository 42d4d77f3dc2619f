package script

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script/sample"
)

// ErrDryRunIncomplete is wrapped by the error of a dry run that found no
// fault but could not run the whole script: the sample arguments were
// rejected by validate or the schema, execute called fail() on purpose, or
// it failed after call_tool returned its placeholder. Such a tool may well
// be right; write_tool stores it and passes the note on.
var ErrDryRunIncomplete = errors.New("the dry run could not exercise the whole script")

// DryRun checks def (see Check) and runs it once, as a call would, against
// sample.Sample(def.InputSchema): prepare (when given), then validate or the
// schema, then execute, with the limits of env. call_tool calls no tool in
// a dry run, since tools may have effects: it returns
// DryRunPlaceholder(name) as the result text.
//
// The error says what to fix, with the script position for script errors
// and the sample arguments used. An error wrapping ErrDryRunIncomplete is a
// note, not a fault.
func DryRun(ctx context.Context, def *Definition, env Env) error {
	env = env.withDefaults()
	env.dryRun = true
	c, err := compile(ctx, def, env)
	if err != nil {
		return err
	}
	args := sample.Sample(def.InputSchema)
	if c.prepare != nil {
		p, err := c.runPrepare(ctx, args)
		if err != nil {
			return dryRunError(def.Name, "prepare", args, err, 0)
		}
		args = p
	}
	if c.validate != nil {
		err = c.runValidate(ctx, args)
	} else if err = c.schema.Validate(args); err != nil {
		return fmt.Errorf("%s: %w: the sample arguments %s made up from the schema do not satisfy it (%v), so execute was not run", def.Name, ErrDryRunIncomplete, describeArgs(args), err)
	}
	if err != nil {
		return dryRunError(def.Name, "validate", args, err, 0)
	}
	_, st, err := c.runExecute(ctx, &agentfleet.Call{ID: "dry-run", Name: def.Name, Arguments: args, Progress: func(any) {}})
	if err != nil {
		return dryRunError(def.Name, "execute", args, err, st.placeholders)
	}
	return nil
}

// DryRunner runs the dry run of a definition, with DryRun's contract: nil
// when the script ran through, an error wrapping ErrDryRunIncomplete for a
// note, any other error for a fault that must be fixed. Where it runs is the
// implementation's choice: write_tool in the orchestrator sends it to a
// script worker (scriptfleet.RemoteDryRun), so that model-written code never
// runs in the orchestrator's process.
type DryRunner interface {
	DryRun(ctx context.Context, def *Definition) error
}

// DryRunFunc adapts a function to DryRunner.
type DryRunFunc func(ctx context.Context, def *Definition) error

// DryRun calls f.
func (f DryRunFunc) DryRun(ctx context.Context, def *Definition) error { return f(ctx, def) }

// LocalDryRun returns a DryRunner that runs DryRun in this process under
// env's limits. It is for processes that may run scripts themselves (a
// script worker, agentctl, tests), never for the orchestrator.
func LocalDryRun(env Env) DryRunner {
	return DryRunFunc(func(ctx context.Context, def *Definition) error { return DryRun(ctx, def, env) })
}

// dryRunError tells a fault of the script from a note.
func dryRunError(tool, fn string, args map[string]any, err error, placeholders int) error {
	var se *Error
	if !errors.As(err, &se) {
		return fmt.Errorf("%s: the dry run of %s with the sample arguments %s failed: %w", tool, fn, describeArgs(args), err)
	}
	switch {
	case se.Kind == ErrCanceled:
		return err
	case se.Kind == ErrRejected:
		return fmt.Errorf("%s: %w: validate rejected the sample arguments %s (%s), so execute was not run", tool, ErrDryRunIncomplete, describeArgs(args), se.Msg)
	case se.Kind == ErrFail:
		return fmt.Errorf("%s: %w: %s called fail() with the sample arguments %s: %s", tool, ErrDryRunIncomplete, fn, describeArgs(args), se.Msg)
	case placeholders > 0 && (se.Kind == ErrRuntime || se.Kind == ErrResult):
		return fmt.Errorf("%s: %w: %s failed after call_tool returned its dry-run placeholder %q, which may be the cause: %s", tool, ErrDryRunIncomplete, fn, DryRunPlaceholder("<name>"), se.Msg)
	}
	return &Error{Tool: tool, Kind: se.Kind, Pos: se.Pos,
		Msg: fmt.Sprintf("the dry run of %s with the sample arguments %s failed: %s", fn, describeArgs(args), se.Msg)}
}
