package inputpolicy

// State is what the session knows that the policy needs for one delivery:
// where the delivery stands (taken by a session or not yet), what the
// session is doing, and what it knows of the delivery's message id. It is a
// small value built for each delivery, so that Step copies nothing of the
// session's indices.
type State struct {
	// Owned: this orchestrator serves the partition of the delivery's
	// session. Asked only before the session is taken.
	Owned bool
	// Taken: Step is called by the session, with its state below. Before,
	// Step says only whether to take the session (Take).
	Taken bool
	// InMemory: before Taken, the session is in memory (an abort acts on no
	// other).
	InMemory bool

	// Evicted: the session left memory while the delivery reached it.
	Evicted bool
	// Stopped is why the session was suspended (it is being handed over),
	// nil while it serves.
	Stopped error
	// Loaded: the session's history is loaded and its loop built.
	Loaded bool
	// Backlog is the number of deliveries held while the session loads.
	Backlog int
	// Queued is the number of messages waiting for a run in the loop.
	Queued int
	// Limit bounds Backlog and Queued.
	Limit int
	// Leased: this orchestrator holds its lease, so it may acknowledge.
	Leased bool

	// Msg is what the session knows of the delivery's message id.
	Msg Message
}

// Message is what a session knows of one message id.
type Message struct {
	// Seen: a message with this id is queued or in the history.
	Seen bool
	// Run is the run that took it ("" while it is queued).
	Run string
	// Ended: that run has its end record; its final message is stored.
	Ended bool
	// Seq is the input stream sequence of the message that took the id, if
	// this process knows it (0 otherwise).
	Seq uint64
	// Delivered: a delivery of it (not a copy read from the stream at load)
	// reached this process, so the next one is a duplicate.
	Delivered bool
	// Answered is the highest stream sequence of a copy (another stream
	// message with the id) whose delivery had the stored answer published
	// again here, 0 if none: a redelivery of that copy, after a lost ack or
	// held twice while the session loaded, is not answered again.
	Answered uint64
	// Replied is the highest stream sequence of a relayed ask whose answer
	// was given here or is coming (a delivery waiting on the run, or the
	// copy read from the stream at load), 0 if none: another delivery of
	// that stream message, or of an earlier one, is not answered again.
	Replied uint64
}
