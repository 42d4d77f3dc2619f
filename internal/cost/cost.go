// Package cost prices model calls: a price table of US dollars per million
// input, cached input and output tokens, and the cost of one call's usage
// under it. It does no I/O; Model applies it to the responses of a model.
package cost

import (
	"errors"
	"fmt"
	"math"

	"github.com/agentfleet/agentfleet"
)

// Price is what a model's tokens cost, in US dollars per million tokens.
// The zero Price makes every call free.
type Price struct {
	// Input is the price of an input (prompt) token not read from the
	// provider's cache.
	Input float64 `yaml:"input" json:"input"`
	// CachedInput is the price of an input token read from the prompt
	// cache. Optional; 0 means the Input price (a provider that
	// discounts cached tokens says by how much).
	CachedInput float64 `yaml:"cached_input" json:"cached_input"`
	// Output is the price of an output (completion) token.
	Output float64 `yaml:"output" json:"output"`
}

// perMillion is the tokens a price is given for.
const perMillion = 1e6

// MaxPrice bounds each price of a Price: a price above it is a typo (a
// price per token written where one per million is meant is smaller, not
// larger, so this catches cents written as dollars a thousand times
// over).
const MaxPrice = 10000

// Check reports the first price of p that is not a finite number between
// 0 and MaxPrice, naming it.
func (p Price) Check() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"input", p.Input}, {"cached_input", p.CachedInput}, {"output", p.Output}} {
		switch {
		case math.IsNaN(f.v) || math.IsInf(f.v, 0):
			return fmt.Errorf("price %s %v is not a number", f.name, f.v)
		case f.v < 0:
			return fmt.Errorf("price %s %v is negative", f.name, f.v)
		case f.v > MaxPrice:
			return fmt.Errorf("price %s %v is above %d dollars per million tokens", f.name, f.v, MaxPrice)
		}
	}
	return nil
}

// ErrBadUsage is the error of Of for a usage whose counts are negative or
// whose cached tokens are more than its input tokens.
var ErrBadUsage = errors.New("cost: bad usage")

// Of returns what the usage u of one call costs under p, in US dollars:
// the uncached input tokens at Input, the cached ones at CachedInput (at
// Input when CachedInput is 0), the output tokens at Output. A usage
// that counts only TotalTokens is priced as input. It fails, with
// ErrBadUsage, on negative counts, or cached tokens above the input ones;
// a nil u costs 0.
func Of(p Price, u *agentfleet.Usage) (float64, error) {
	if u == nil {
		return 0, nil
	}
	in, out, cached := u.InputTokens, u.OutputTokens, u.CachedInputTokens
	if in < 0 || out < 0 || cached < 0 || u.TotalTokens < 0 {
		return 0, fmt.Errorf("%w: negative token count (input %d, output %d, cached %d, total %d)", ErrBadUsage, in, out, cached, u.TotalTokens)
	}
	if cached > in {
		return 0, fmt.Errorf("%w: %d cached input tokens of %d input tokens", ErrBadUsage, cached, in)
	}
	if in == 0 && out == 0 {
		in = u.TotalTokens
	}
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	// Sum per-million products first, then divide once: fewer roundings.
	c := float64(in-cached)*p.Input + float64(cached)*cachedPrice + float64(out)*p.Output
	return c / perMillion, nil
}
