package script

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet/internal/script/rewrite"
	"github.com/agentfleet/agentfleet/internal/tools"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Check reports whether def can become a tool: its name is a valid tool
// name, it has a description, its input schema compiles and is of type
// object, and each script compiles, runs its top-level code within the
// default limits and defines its function (execute(args) in code,
// validate(args) in validate_code, prepare(args) in prepare_code). The error
// says what to fix; script errors carry the field, line and column, as in
// "code:3:7: undefined: foo".
func Check(def *Definition) error {
	_, err := compile(context.Background(), def, Env{}.withDefaults())
	return err
}

// compiled is a checked definition with its loaded scripts.
type compiled struct {
	def      *Definition
	env      Env
	schema   *tools.Schema
	execute  *entry
	validate *entry // nil when the definition has no validate_code
	prepare  *entry // nil when the definition has no prepare_code
}

// entry is the function a script defines, with its frozen globals.
type entry struct {
	field string // "code", "validate_code", "prepare_code"
	name  string // "execute", "validate", "prepare"
	fn    *starlark.Function
}

func compile(ctx context.Context, def *Definition, env Env) (*compiled, error) {
	if def == nil {
		return nil, errors.New("no definition")
	}
	if err := checkName(def.Name); err != nil {
		return nil, fmt.Errorf("tool %w", err)
	}
	if strings.TrimSpace(def.Description) == "" {
		return nil, fmt.Errorf("tool %s: description is empty: say what the tool does, so that the model can choose it", def.Name)
	}
	schema, err := checkSchema(def.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", def.Name, err)
	}
	c := &compiled{def: def, env: env, schema: schema}
	if c.execute, err = load(ctx, def.Name, env, "code", def.Code, "execute"); err != nil {
		return nil, fmt.Errorf("tool %s: %w", def.Name, err)
	}
	if strings.TrimSpace(def.ValidateCode) != "" {
		if c.validate, err = load(ctx, def.Name, env, "validate_code", def.ValidateCode, "validate"); err != nil {
			return nil, fmt.Errorf("tool %s: %w", def.Name, err)
		}
	}
	if strings.TrimSpace(def.PrepareCode) != "" {
		if c.prepare, err = load(ctx, def.Name, env, "prepare_code", def.PrepareCode, "prepare"); err != nil {
			return nil, fmt.Errorf("tool %s: %w", def.Name, err)
		}
	}
	return c, nil
}

// checkSchema compiles raw and checks that it describes an object.
func checkSchema(raw json.RawMessage) (*tools.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, errors.New(`input_schema is missing: give a JSON Schema object such as {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	}
	s, err := tools.CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	var top map[string]any
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	if t, _ := top["type"].(string); t != "object" {
		return nil, fmt.Errorf(`input schema: "type" is %s, want "object": the arguments of a tool are an object`, describeJSON(top["type"]))
	}
	return s, nil
}

func describeJSON(v any) string {
	if v == nil {
		return "missing"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// load compiles the script src (named field in positions), runs its
// top-level code and returns its function fname.
func load(ctx context.Context, tool string, env Env, field, src, fname string) (*entry, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("%s is empty: it must define %s(args)", field, fname)
	}
	f, err := fileOptions.Parse(field, src, 0)
	if err != nil {
		return nil, compileError(err)
	}
	rewrite.File(f)
	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, compileError(err)
	}
	if prog.NumLoads() > 0 {
		_, pos := prog.Load(0)
		return nil, fmt.Errorf("%s: load is not available: a scripted tool is one self-contained script", pos)
	}
	st := &callState{env: &env, tool: tool}
	globals, err := initProgram(ctx, st, prog)
	if err != nil {
		return nil, fmt.Errorf("%s: top-level code failed: %w", field, err)
	}
	globals.Freeze()
	v, ok := globals[fname]
	if !ok {
		return nil, fmt.Errorf("%s does not define %s(args): add a function \"def %s(args):\"", field, fname, fname)
	}
	fn, ok := v.(*starlark.Function)
	if !ok {
		return nil, fmt.Errorf("%s: %s is a %s, want a function defined with \"def %s(args):\"", field, fname, v.Type(), fname)
	}
	if fn.NumParams() == 0 && !fn.HasVarargs() {
		return nil, fmt.Errorf("%s: %s: %s takes no parameter, want one: def %s(args):", field, fn.Position(), fname, fname)
	}
	for i := 1; i < fn.NumParams(); i++ {
		if fn.ParamDefault(i) == nil {
			p, pos := fn.Param(i)
			return nil, fmt.Errorf("%s: %s: %s must take one parameter, args; parameter %s has no default", field, pos, fname, p)
		}
	}
	return &entry{field: field, name: fname, fn: fn}, nil
}

// compileError lists the syntax or resolver errors of a script, each with
// its position ("code:3:7: undefined: foo").
func compileError(err error) error {
	var rl resolve.ErrorList
	if errors.As(err, &rl) {
		msgs := make([]string, 0, len(rl))
		for i, e := range rl {
			if i == 5 {
				msgs = append(msgs, fmt.Sprintf("and %d more", len(rl)-i))
				break
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s", e.Pos, e.Msg))
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var se syntax.Error
	if errors.As(err, &se) {
		return fmt.Errorf("%s: syntax error: %s", se.Pos, se.Msg)
	}
	return err
}
