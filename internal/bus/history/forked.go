package history

// RecordForked marks the first record a fork wrote after the records it
// copied; its data is the Forked.
const RecordForked = "forked"

// Forked is the data of a forked record (RecordForked): the session was
// made by copying the records of session Source of agent Agent up to a
// point, stored message AtSeq of the source included (0: none), or the
// records before run BeforeRun when the fork was asked that way. Records
// counts the records copied. Model, when set, is the model the session's
// runs use from then on instead of its agent's, one the agent's profile
// allows a fork (fork_models); a later forked record decides anew.
type Forked struct {
	Agent     string `json:"agent"`
	Source    string `json:"source"`
	AtSeq     uint64 `json:"at_seq"`
	BeforeRun string `json:"before_run,omitempty"`
	Records   int    `json:"records"`
	Model     string `json:"model,omitempty"`
}
