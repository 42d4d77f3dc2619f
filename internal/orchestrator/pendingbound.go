package orchestrator

import "github.com/agentfleet/agentfleet/internal/bus/input"

// pendingBound is the stream sequence up to which a loading session reads
// its input from the stream (input.DurableInput.PendingBefore), given the
// input that arrived while it loaded: the sequence of the first, when that
// is a first delivery from the stream, since the consumer delivers in
// stream order and so brings everything after it here; 0, everything,
// otherwise (a recovery with no delivery, a redelivery, which may follow
// deliveries to an owner that died, or input that did not come through the
// stream). read is false when there is nothing to read: the first is a
// first delivery that the stream stored on the condition that no other
// input of the session was in it (Inbound.First).
func pendingBound(backlog []*input.Inbound) (before uint64, read bool) {
	if len(backlog) == 0 {
		return 0, true
	}
	if first := backlog[0]; first.Seq > 0 && first.Delivery == 1 {
		return first.Seq, !first.First
	}
	return 0, true
}
