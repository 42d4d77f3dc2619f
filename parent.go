package agentfleet

import "strconv"

// Parent names the tool call that a run answers when one agent asks another
// as a tool (a profile's agents: list): the calling agent, its session, its
// run and the call's id, and the chain of agents of the delegation, from the
// first caller to Agent. It is stored with the child run's user message and
// carried on every event of that run.
type Parent struct {
	Agent      string `json:"agent"`
	Session    string `json:"session"`
	RunID      string `json:"run_id"`
	ToolCallID string `json:"tool_call_id"`
	// Chain lists the agents whose runs wait on this one, the first caller
	// first and Agent last; its length is the run's depth.
	Chain []string `json:"chain,omitempty"`
	// Budget is what remained of the parent run's budgets when it asked;
	// nil when it had none. The child's run is held within it as well as
	// within its own profile's.
	Budget *Budget `json:"budget,omitempty"`
}

// Budget is what a parent run had left of its budgets when it asked a
// child: the tokens and tool calls the child's run may spend. A zero field
// sets no bound.
type Budget struct {
	Tokens    int `json:"tokens,omitempty"`
	ToolCalls int `json:"tool_calls,omitempty"`
}

// appendParent appends p's JSON form, as encoding/json writes it.
func appendParent(b []byte, p *Parent) []byte {
	b = append(b, `{"agent":`...)
	b = appendJSONString(b, p.Agent)
	b = append(b, `,"session":`...)
	b = appendJSONString(b, p.Session)
	b = append(b, `,"run_id":`...)
	b = appendJSONString(b, p.RunID)
	b = append(b, `,"tool_call_id":`...)
	b = appendJSONString(b, p.ToolCallID)
	if len(p.Chain) > 0 {
		b = append(b, `,"chain":[`...)
		for i, a := range p.Chain {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, a)
		}
		b = append(b, ']')
	}
	if bu := p.Budget; bu != nil {
		b = append(b, `,"budget":{`...)
		sep := ""
		if bu.Tokens != 0 {
			b = strconv.AppendInt(append(b, `"tokens":`...), int64(bu.Tokens), 10)
			sep = ","
		}
		if bu.ToolCalls != 0 {
			b = strconv.AppendInt(append(append(b, sep...), `"tool_calls":`...), int64(bu.ToolCalls), 10)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}
