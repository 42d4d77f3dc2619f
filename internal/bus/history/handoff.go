package history

// Handoff is the data of a handoff record (RecordHandoff): during a run of
// agent From, its call ToolCallID of the tool transfer_to_<To> handed the
// session over to agent To, for Reason (the model's, may be empty). The
// session keeps its subjects and its history; its next runs are To's.
type Handoff struct {
	From       string `json:"from"`
	To         string `json:"to"`
	Reason     string `json:"reason,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}
