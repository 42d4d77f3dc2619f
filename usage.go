package agentfleet

// Usage counts the tokens of one model call, or of a tool that spent some.
type Usage struct {
	InputTokens  int `json:"input_tokens" msgpack:"input_tokens"`
	OutputTokens int `json:"output_tokens" msgpack:"output_tokens"`
	TotalTokens  int `json:"total_tokens" msgpack:"total_tokens"`
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
	}
	return &s
}
