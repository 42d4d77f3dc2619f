package delegate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// DefaultMaxDepth bounds how deep delegations nest by default: a client's
// run may ask a child, which may ask a grandchild, which may ask one more.
const DefaultMaxDepth = 3

// MaxChain is the most agents a chain header may name, whatever the
// configured depth: a longer one is refused as malformed.
const MaxChain = 16

// Check decides whether caller, whose run answers the delegation chain
// chain (nil for a client's run), may ask target: not when target is
// already waiting in the chain or is caller (a cycle), nor when the child
// would be deeper than maxDepth (DefaultMaxDepth when not positive). It
// returns the child's chain, or an error meant for the model that names the
// chain.
func Check(chain []string, caller, target string, maxDepth int) ([]string, error) {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	next := append(slices.Clip(chain), caller)
	if slices.Contains(next, target) {
		return nil, fmt.Errorf("refused: agent %s is already waiting in this delegation (%s → %s), so asking it would be a cycle", target, strings.Join(next, " → "), target)
	}
	if len(next) > maxDepth {
		return nil, fmt.Errorf("refused: asking agent %s would nest delegations %d deep (%s → %s), the limit is %d", target, len(next), strings.Join(next, " → "), target, maxDepth)
	}
	return next, nil
}

// Admit decides whether an ask of target that names parent p (nil for a
// client's ask) may start a run: the same bounds as Check, applied by the
// receiving orchestrator to what the headers claim, so that an ask sent
// with a forged chain cannot start a run deeper than maxDepth or inside a
// cycle.
func Admit(p *agentfleet.Parent, target string, maxDepth int) error {
	if p == nil {
		return nil
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if slices.Contains(p.Chain, target) {
		return fmt.Errorf("header %s: agent %s is already waiting in the delegation %s, so this ask would be a cycle", HeaderChain, target, strings.Join(p.Chain, " → "))
	}
	if len(p.Chain) > maxDepth {
		return fmt.Errorf("header %s: the delegation %s → %s is %d deep, the limit is %d", HeaderChain, strings.Join(p.Chain, " → "), target, len(p.Chain), maxDepth)
	}
	return nil
}
