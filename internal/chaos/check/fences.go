package check

// verifyLedgerFences checks that no ledger execution came from a deposed
// owner: in the order the ledger stored them, an execution whose fence
// epoch is lower than that of an earlier execution of the same partition
// ran for an owner that a later claim had replaced, after the worker had
// seen the later claim. Executions without a fence are not judged.
func verifyLedgerFences(rep *Findings, ledger []LedgerRecord) {
	highest := map[int]LedgerRecord{}
	for _, l := range ledger {
		if l.Epoch == 0 {
			continue
		}
		rep.LedgerFenced++
		h, ok := highest[l.Partition]
		switch {
		case !ok || l.Epoch > h.Epoch:
			highest[l.Partition] = l
		case l.Epoch < h.Epoch:
			rep.add(ClassLedgerDeposed, "ledger call %s (seq %d) executed for owner %q at epoch %d of partition %d, after call %s (seq %d) of owner %q at epoch %d",
				l.Call, l.Seq, l.Owner, l.Epoch, l.Partition, h.Call, h.Seq, h.Owner, h.Epoch)
		}
	}
}
