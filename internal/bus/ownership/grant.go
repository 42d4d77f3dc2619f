package ownership

// Grant decides whether a member whose view of partition p is c hands out
// a fence for p now, and which: its own, at the epoch it holds p at, while
// it holds p, is not handing it over and its lease has not ended. A lease
// in doubt grants: the member still owns p and takes its input (the table's
// Owns), and every write under the fence waits on Check until the lease
// holds again or is found lost. (Refused in the doubt, the fence was one of
// epoch 0, which never holds, and the session that took it kept it for its
// whole life in memory: its runs stopped at their first write.) A refusal
// returns the fence of epoch 0, which never holds.
func Grant(p int, c Claim) (Fence, bool) {
	f := Fence{Partition: p, Owner: c.Self}
	if !c.Held || c.Releasing || c.Lease != nil && !c.InDoubt {
		return f, false
	}
	f.Epoch = c.Epoch
	return f, true
}

// Outdated reports whether a session that came into memory under fence
// held must be taken in afresh: its partition's table now grants fence now
// (granted), and held is another. Such a fence never holds again: it was
// taken while the partition was not this member's (epoch 0), or under an
// earlier claim. A table that grants nothing now (the partition handed
// over or not yet claimed, the lease ended) decides nothing here: the
// session's own checks and the handover deal with it.
func Outdated(held, now Fence, granted bool) bool {
	return granted && held != now
}
