package script

import "github.com/agentfleet/agentfleet"

// ResultError is the error an Env.CallTool returns when the tool it called
// answered with an error result: call_tool(full=True) hands the script that
// result, content and details, with is_error set, rather than only its
// text. Its text is the result's text.
type ResultError struct {
	Result *agentfleet.ToolResult
}

func (e *ResultError) Error() string { return agentfleet.JoinText(e.Result.Content) }
