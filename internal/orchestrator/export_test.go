package orchestrator

// LeaseOf returns the state of o's lease (partition.Table.Valid), for tests
// that watch it go into doubt; nil without a partition table.
func LeaseOf(o *Orchestrator) error {
	if t := o.partitions(); t != nil {
		return t.Valid()
	}
	return nil
}
