package script

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync/atomic"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script/convert"
	"go.starlark.net/starlark"
)

// The depth of call_tool nesting travels in two ways: in the context within
// one process, and in the call ID across the bus (the only field of a call
// that reaches a worker's handler unchanged). A nested call's ID is
// "<root>~d<depth>~<unique>", where root is the ID of the outermost call.

type depthKey struct{}

// WithCallDepth returns ctx marked as running a call nested depth levels
// deep in call_tool chains.
func WithCallDepth(ctx context.Context, depth int) context.Context {
	return context.WithValue(ctx, depthKey{}, depth)
}

// CallDepth returns the call_tool nesting of a call: the larger of the
// depth marked on ctx and the depth encoded in the call's ID. A call the
// model made has depth 0.
func CallDepth(ctx context.Context, callID string) int {
	d, _ := ctx.Value(depthKey{}).(int)
	if m := nestedIDRE.FindStringSubmatch(callID); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > d {
			d = n
		}
	}
	return d
}

var nestedIDRE = regexp.MustCompile(`~d([0-9]+)~[0-9a-z]+$`)

var (
	idTag = func() string {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		return hex.EncodeToString(b)
	}()
	idSeq atomic.Uint64
)

// nestedID returns the ID of a call made at depth from within the call
// parent. It is unique across processes, so that workers can tell
// concurrent nested calls apart.
func nestedID(parent string, depth int) string {
	root := parent
	if loc := nestedIDRE.FindStringIndex(parent); loc != nil {
		root = parent[:loc[0]]
	}
	if root == "" {
		root = "script"
	}
	return fmt.Sprintf("%s~d%d~%s%s", root, depth, idTag, strconv.FormatUint(idSeq.Add(1), 36))
}

// DryRunPlaceholder is the text call_tool returns in a dry run, where no
// tool is called.
func DryRunPlaceholder(name string) string { return fmt.Sprintf("(dry run: %s not called)", name) }

// callToolBuiltin is call_tool(name, args={}, full=False). It returns the
// text of the result, and fails when the call fails. With full=True it
// returns a dict {"text", "content", "details", "is_error"} and never fails
// for a call that could not be made or failed (the depth limit included),
// so that the script can handle it.
func callToolBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var (
		name  string
		targs = new(starlark.Dict)
		full  bool
	)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name, "args?", &targs, "full?", &full); err != nil {
		return nil, err
	}
	st := stateOf(thread)
	if st == nil || st.entry != "execute" {
		return nil, errors.New("call_tool may be called only while execute runs")
	}
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("call_tool: tool %w", err)
	}
	// The arguments travel as one message: bounded like a result, with
	// room to spare.
	if err := checkJSONSize(targs, fmt.Sprintf("call_tool(%q): args", name), 4*st.env.MaxResultBytes); err != nil {
		return nil, err
	}
	gargs, err := convert.ToGo(targs)
	if err != nil {
		return nil, fmt.Errorf("call_tool(%q): args: %w", name, err)
	}
	depth := st.depth + 1
	var (
		res     *agentfleet.ToolResult
		refused bool // by call_tool itself, not by the tool called
	)
	switch {
	case depth > st.env.MaxDepth:
		refused = true
		err = fmt.Errorf("call_tool(%q): the limit of %d nested tool calls is reached; scripted tools cannot call each other deeper", name, st.env.MaxDepth)
	case st.env.dryRun:
		st.placeholders++
		res = agentfleet.TextResult(DryRunPlaceholder(name))
	case st.env.CallTool == nil:
		refused = true
		err = errors.New("call_tool is not available here")
	default:
		call := &agentfleet.ToolCall{ID: nestedID(st.call.ID, depth), Name: name, Arguments: gargs.(map[string]any)}
		res, err = st.env.CallTool(WithCallDepth(st.ctx, depth), call)
	}
	if err != nil {
		if st.ctx.Err() != nil {
			return nil, err // the run's own end explains it
		}
		switch {
		case !full && refused:
			return nil, err
		case !full:
			return nil, fmt.Errorf("call_tool(%q) failed: %v", name, err)
		}
		var re *ResultError
		if errors.As(err, &re) && re.Result != nil {
			return resultDict(re.Result, true)
		}
		return resultDict(agentfleet.ErrorResult(err.Error()), true)
	}
	if res == nil {
		res = &agentfleet.ToolResult{}
	}
	if !full {
		return starlark.String(agentfleet.JoinText(res.Content)), nil
	}
	return resultDict(res, false)
}

func resultDict(r *agentfleet.ToolResult, isError bool) (starlark.Value, error) {
	blocks := make([]any, 0, len(r.Content))
	for _, c := range r.Content {
		m := map[string]any{"type": c.Type}
		if c.Text != "" || c.Type == agentfleet.ContentText {
			m["text"] = c.Text
		}
		if c.Data != "" {
			m["data"] = c.Data
		}
		if c.MIMEType != "" {
			m["mime_type"] = c.MIMEType
		}
		blocks = append(blocks, m)
	}
	details := r.Details
	if details == nil {
		details = map[string]any{}
	}
	return convert.ToStarlark(map[string]any{
		"text":     agentfleet.JoinText(r.Content),
		"content":  blocks,
		"details":  details,
		"is_error": isError,
	})
}
