package agentfleet

// ContextSummary is a summary of the oldest part of a session's history,
// written by the model for the summarize context strategy: requests send
// it in place of the first Covers messages. It is stored as a record of
// the session's history, so that it survives restarts and is not written
// again.
type ContextSummary struct {
	// Covers counts the messages of the history, from the first, that the
	// summary replaces.
	Covers int `json:"covers"`
	// Text is the summary.
	Text string `json:"text"`
	// Usage is what writing it cost; it counts in the session's budget.
	Usage *Usage `json:"usage,omitempty"`
}
