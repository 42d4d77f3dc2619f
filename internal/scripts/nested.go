package scripts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/script"
)

// DefaultCallTimeout bounds a nested call whose caller has no deadline:
// the pipeline's default timeout of a call (pipeline.DefaultTimeout).
const DefaultCallTimeout = 60 * time.Second

// FleetCaller returns a script.Env CallTool that runs a script's call_tool
// on the fleet through client. A call is bounded by the caller's deadline
// (a script's own time limit) or, when it has none, by timeout (default
// DefaultCallTimeout). The call's ID, which carries the depth of
// nesting, is passed on unchanged. It refuses every tool not in the
// caller's allowed list (see bus.CallerFrom), and every tool when ctx
// carries no caller or the list is empty; a tool the caller's list names
// as gated (its calls need a person's decision) is refused with an error
// that says so, and so is one in both lists. Both lists are passed on, so
// that scripts called by scripts are bound alike.
func FleetCaller(client *toolrpc.ToolClient, timeout time.Duration) func(ctx context.Context, call *agentfleet.ToolCall) (*agentfleet.ToolResult, error) {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	return func(ctx context.Context, call *agentfleet.ToolCall) (*agentfleet.ToolResult, error) {
		t := timeout
		if dl, ok := ctx.Deadline(); ok {
			t = time.Until(dl)
		}
		if t <= 0 {
			return nil, fmt.Errorf("Tool %s: no time left for the call", call.Name)
		}
		// A script calls with its caller's permissions, passed on to the
		// tools it calls. No list means nothing allowed: a request that
		// lost or never had its list must not reach the whole fleet.
		c, _ := toolrpc.CallerFrom(ctx)
		if err := CheckNested(c, call.Name); err != nil {
			return nil, err
		}
		res, err := client.Execute(ctx, &toolrpc.Call{
			ID: call.ID, Name: call.Name, Args: call.Arguments, Timeout: t,
			Agent: c.Agent, Session: c.Session, RunID: c.RunID, Allowed: c.Allowed, Gated: c.Gated, Fence: c.Fence,
		}, func(any) {})
		if re, ok := errors.AsType[*toolrpc.ResultError](err); ok {
			// call_tool(full=True) hands a script the tool's error result.
			return nil, &script.ResultError{Result: re.Result}
		}
		return res, err
	}
}

// NestedApprovalText is the error of a call_tool of a tool whose calls need
// a person's decision: a nested call cannot wait for one.
const NestedApprovalText = "call_tool: tool %s of agent %s needs a person's approval, which a call from inside a scripted tool cannot wait for; it was not called. The model must call %s directly, so that its call waits for a decision"

// CheckNested decides whether a script running for caller c may call tool
// name through call_tool: the tool must be in c.Allowed and not in c.Gated.
// It fails closed: without an allowed list, no tool. Names are compared as
// they are, since tool subjects are; a gated tool named in another case is
// another tool, and must be in the allowed list like any.
func CheckNested(c toolrpc.Caller, name string) error {
	if slices.Contains(c.Gated, name) {
		return fmt.Errorf(NestedApprovalText, name, orUnnamed(c.Agent), name)
	}
	if len(c.Allowed) == 0 {
		return fmt.Errorf("call_tool: tool %s is not allowed: the call request of this scripted tool carried no allowed list (field \"allowed\": the tools of the calling agent), so call_tool reaches no tool", name)
	}
	if !slices.Contains(c.Allowed, name) {
		return fmt.Errorf("call_tool: tool %s is not allowed for agent %s", name, orUnnamed(c.Agent))
	}
	return nil
}

func orUnnamed(agent string) string {
	if agent == "" {
		return "(unnamed)"
	}
	return agent
}
