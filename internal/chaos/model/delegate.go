package model

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Child is the agent the model asks, as a tool, when a request offers the
// tool ToolAsk: for about one message in four (Delegates) its first turn
// asks Child "task <msgid>.c" (ChildTask) beside its other calls.
const (
	Child   = "helper"
	ToolAsk = "ask_" + Child
	// ChildSuffix ends the task id a parent gives its child; a child's
	// task does not delegate again.
	ChildSuffix = ".c"
)

// Delegates says whether the run of msgid asks Child, when it may.
func Delegates(msgid string) bool {
	return !strings.HasSuffix(msgid, ChildSuffix) && hash64("delegate", msgid)%4 == 0
}

// ChildTask is the message the run of msgid asks Child.
func ChildTask(msgid string) string { return "task " + msgid + ChildSuffix }

// askCall is the call of ToolAsk that the run of msgid adds as its i-th.
func askCall(msgid string, i int) PlannedCall {
	args, _ := json.Marshal(map[string]string{"message": ChildTask(msgid)})
	return PlannedCall{ID: fmt.Sprintf("call_%s_%d", msgid, i), Name: ToolAsk, Args: string(args)}
}

// offers says whether the request offers the tool name.
func offers(req *chatRequest, name string) bool {
	for _, t := range req.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}
