package delegate

import (
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
)

// The headers of an ask sent by an ask tool: the parent's agent, session,
// run and tool call id, and the chain of agents waiting. All five or none.
const (
	HeaderAgent   = "Agentfleet-Parent-Agent"
	HeaderSession = "Agentfleet-Parent-Session"
	HeaderRun     = "Agentfleet-Parent-Run"
	HeaderCall    = "Agentfleet-Parent-Call"
	HeaderChain   = "Agentfleet-Parent-Chain"
)

// Headers lists the parent headers, in the order Encode writes them.
var Headers = []string{HeaderAgent, HeaderSession, HeaderRun, HeaderCall, HeaderChain}

// MaxIDBytes bounds the run and tool call ids a header may carry.
const MaxIDBytes = 256

// Encode returns the headers that carry p, by name.
func Encode(p *agentfleet.Parent) map[string]string {
	h := map[string]string{
		HeaderAgent: p.Agent, HeaderSession: p.Session, HeaderRun: p.RunID, HeaderCall: p.ToolCallID,
		HeaderChain: strings.Join(p.Chain, ","),
	}
	encodeBudget(h, p.Budget)
	return h
}

// Parse reads the parent of an ask from its headers through get (a
// header's first value, "" when absent): nil when none of them is set. A
// header missing beside the others, too long, not a token (agent, session,
// the chain's names), not printable ASCII (run, call), a chain longer than
// MaxChain or one that does not end with the parent's agent is an error
// that names the header and what is wrong; so is a budget header
// (HeaderBudgetTokens, HeaderBudgetToolCalls) without them, or with a value
// that is not a count.
func Parse(get func(name string) string) (*agentfleet.Parent, error) {
	var vals [5]string
	set := 0
	for i, h := range Headers {
		if vals[i] = get(h); vals[i] != "" {
			set++
		}
	}
	budget, err := parseBudget(get)
	switch {
	case err != nil:
		return nil, err
	case set == 0 && budget != nil:
		return nil, fmt.Errorf("header %s or %s comes only with the parent headers %s", HeaderBudgetTokens, HeaderBudgetToolCalls, strings.Join(Headers, ", "))
	case set == 0:
		return nil, nil
	}
	for i, h := range Headers {
		if vals[i] == "" {
			return nil, fmt.Errorf("header %s is missing: the parent headers %s come all together or not at all", h, strings.Join(Headers, ", "))
		}
	}
	p := &agentfleet.Parent{Agent: vals[0], Session: vals[1], RunID: vals[2], ToolCallID: vals[3], Budget: budget}
	if err := bus.CheckToken("agent", p.Agent); err != nil {
		return nil, fmt.Errorf("header %s: %w", HeaderAgent, err)
	}
	if err := bus.CheckToken("session", p.Session); err != nil {
		return nil, fmt.Errorf("header %s: %w", HeaderSession, err)
	}
	for _, f := range []struct{ h, v string }{{HeaderRun, p.RunID}, {HeaderCall, p.ToolCallID}} {
		if err := checkID(f.v); err != nil {
			return nil, fmt.Errorf("header %s: %w", f.h, err)
		}
	}
	chain := vals[4]
	if n := strings.Count(chain, ",") + 1; n > MaxChain {
		return nil, fmt.Errorf("header %s names %d agents, the limit is %d", HeaderChain, n, MaxChain)
	}
	p.Chain = strings.Split(chain, ",")
	for i, a := range p.Chain {
		if err := bus.CheckToken("agent", a); err != nil {
			return nil, fmt.Errorf("header %s, entry %d: %w", HeaderChain, i+1, err)
		}
	}
	if last := p.Chain[len(p.Chain)-1]; last != p.Agent {
		return nil, fmt.Errorf("header %s ends with agent %q, not with the parent agent %q of header %s", HeaderChain, last, p.Agent, HeaderAgent)
	}
	return p, nil
}

// checkID says why id may not stand as a run or tool call id in a header.
func checkID(id string) error {
	if len(id) > MaxIDBytes {
		return fmt.Errorf("%d bytes long, the limit is %d", len(id), MaxIDBytes)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("byte %d is 0x%02x: only printable ASCII without spaces is allowed", i+1, c)
		}
	}
	return nil
}
