// Package approval holds tool calls for a person's decision: which calls
// need one (Policy), and, per session, the calls that wait and the
// decisions that settle them (Gate), whose before-tool-call hook (spec
// section 14) is where a call waits. It stores nothing itself: the session
// gives it the functions that store a request and a decision in its
// history, so that whichever orchestrator owns the session next waits for
// the same calls and takes the same decisions.
package approval

import (
	"fmt"
	"path"
	"time"

	"github.com/agentfleet/agentfleet"
)

// DefaultTimeout is how long a call waits for a decision when the policy
// sets no timeout.
const DefaultTimeout = 10 * time.Minute

// Policy says which tool calls wait for a person's decision. The zero value
// needs none.
type Policy struct {
	// Tools names the tools whose calls need approval, by name or glob
	// ("delete_*").
	Tools []string
	// Destructive asks approval for every tool annotated destructive
	// (MCP tools whose destructiveHint says so included).
	Destructive bool
	// Timeout bounds the wait for a decision; default DefaultTimeout.
	Timeout time.Duration
}

// Check reports a glob of Tools that does not parse.
func (p *Policy) Check() error {
	for _, pat := range p.Tools {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("approve pattern %q: %w", pat, err)
		}
	}
	if p.Timeout < 0 {
		return fmt.Errorf("approval_timeout %v is negative", p.Timeout)
	}
	return nil
}

// Enabled reports whether any call may need approval.
func (p *Policy) Enabled() bool { return len(p.Tools) > 0 || p.Destructive }

// Needs reports whether a call of tool t waits for approval.
func (p *Policy) Needs(t *agentfleet.Tool) bool {
	if t == nil {
		return false
	}
	if p.Destructive && t.Annotations.Destructive {
		return true
	}
	for _, pat := range p.Tools {
		if ok, _ := path.Match(pat, t.Name); ok {
			return true
		}
	}
	return false
}

// timeout returns the policy's timeout, default filled in.
func (p *Policy) timeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultTimeout
	}
	return p.Timeout
}
