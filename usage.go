package agentfleet

// Usage counts the tokens of one model call, or of a tool that spent some,
// and what they cost.
type Usage struct {
	InputTokens  int `json:"input_tokens" msgpack:"input_tokens"`
	OutputTokens int `json:"output_tokens" msgpack:"output_tokens"`
	TotalTokens  int `json:"total_tokens" msgpack:"total_tokens"`
	// CachedInputTokens is the part of InputTokens that the provider read
	// from its prompt cache (priced apart), as its usage reports it.
	CachedInputTokens int `json:"cached_input_tokens,omitempty" msgpack:"cached_input_tokens,omitempty"`
	// Cost is what the tokens cost, in US dollars, from the price table of
	// the model's endpoint (package cost); 0 when no price is known.
	Cost float64 `json:"cost,omitempty" msgpack:"cost,omitempty"`
}

// Add returns the sum of u and o; either may be nil.
func (u *Usage) Add(o *Usage) *Usage {
	if u == nil && o == nil {
		return nil
	}
	var s Usage
	if u != nil {
		s = *u
	}
	if o != nil {
		s.InputTokens += o.InputTokens
		s.OutputTokens += o.OutputTokens
		s.TotalTokens += o.TotalTokens
		s.CachedInputTokens += o.CachedInputTokens
		s.Cost += o.Cost
	}
	return &s
}

// CostOf returns the cost u counts, 0 for no usage.
func CostOf(u *Usage) float64 {
	if u == nil {
		return 0
	}
	return u.Cost
}
