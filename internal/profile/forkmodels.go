package profile

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// The models a fork may choose: a replay re-runs a run of a session in a
// fork of it, and may ask for another model than the agent's, to compare
// the two. Which models, and so which endpoints and prices, a client may
// have the fleet use is the operator's to say: only those of the agent's
// fork_models. Nothing else of the profile (prompt, tools, limits,
// approval) can be changed by a fork.

// checkForkModels validates fork_models: names without white space, each
// once.
func (p *Profile) checkForkModels() error {
	for i, m := range p.ForkModels {
		if m == "" || len(m) > 256 || strings.IndexFunc(m, func(r rune) bool { return r <= ' ' || !unicode.IsPrint(r) }) >= 0 {
			return fmt.Errorf("fork_models entry %d: name %q is empty, too long or has white space", i+1, m)
		}
		if slices.Index(p.ForkModels, m) < i {
			return fmt.Errorf("fork_models entry %d: model %q is listed twice", i+1, m)
		}
	}
	return nil
}

// ForkModel returns nil when a fork of the agent's sessions may run on
// model: the agent's own (or none named), or one of its fork_models; else
// an error that names the models it may use.
func (p *Profile) ForkModel(model string) error {
	if model == "" || model == p.Model || slices.Contains(p.ForkModels, model) {
		return nil
	}
	allowed := "none (its profile lists no fork_models)"
	if len(p.ForkModels) > 0 {
		allowed = strings.Join(p.ForkModels, ", ")
	}
	return fmt.Errorf("agent %q may not be forked onto model %q: the models a fork of it may choose are %s", p.Name, model, allowed)
}
