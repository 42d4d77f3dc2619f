package ownership

// Claim is what a partition table knows of one partition when a fence is
// checked against it.
type Claim struct {
	// Self is the id of the member that keeps the table.
	Self string
	// Lease is nil while the member's lease certainly holds; otherwise why
	// not. InDoubt marks a lease whose renewals went unanswered: it may
	// hold again.
	Lease   error
	InDoubt bool
	// Held: the member holds the partition (serving it or handing it over),
	// claimed at Epoch; Releasing: it is handing it over.
	Held      bool
	Releasing bool
	Epoch     uint64
	// Owner and KeyEpoch are the partition's key as last seen in the
	// bucket ("" when it has none).
	Owner    string
	KeyEpoch uint64
}

// Check decides whether fence f holds given claim c: the fence is the
// member's own, its lease has not ended, and the partition is still held at
// the fence's epoch. A lease in doubt returns c.Lease (an error that can
// pass) for a fence that otherwise holds.
func Check(f Fence, c Claim) error {
	current := func(reason error) error {
		e := &FencedError{Fence: f, Reason: reason}
		switch {
		case c.Held:
			e.Owner, e.Epoch = c.Self, c.Epoch
		case c.Owner != "":
			e.Owner, e.Epoch = c.Owner, c.KeyEpoch
		}
		return e
	}
	switch {
	case f.Owner != c.Self || f.Epoch == 0:
		return current(nil)
	case c.Lease != nil && !c.InDoubt:
		return current(c.Lease)
	case !c.Held || c.Epoch != f.Epoch:
		return current(nil)
	case c.Lease != nil:
		return c.Lease
	}
	return nil
}
