package approval

import "github.com/agentfleet/agentfleet"

// Nested splits the tools of an agent into those a scripted tool's
// call_tool may reach on the agent's behalf (allowed) and those whose calls
// need a person's decision (gated). A call made from inside a scripted tool
// has no place to wait for a decision and no model to tell, so the policy
// that holds a direct call refuses it nested: the gated tools are left out
// of the allowed list, whatever the depth, and named so that the refusal
// can say why. The zero policy gates nothing. Names keep the order of tools;
// a nil tool is skipped.
func (p *Policy) Nested(tools []*agentfleet.Tool) (allowed, gated []string) {
	allowed = make([]string, 0, len(tools))
	for _, t := range tools {
		switch {
		case t == nil:
		case p.Needs(t):
			gated = append(gated, t.Name)
		default:
			allowed = append(allowed, t.Name)
		}
	}
	return allowed, gated
}
