package fleet

// Has reports whether the worker of instance id is a member of the fleet
// now: it answered, announced itself or beat, and has neither said it left
// nor been silent for too long. An orchestrator taking over a call that
// worker runs waits for its outcome only while it is.
func (f *Fleet) Has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.members[id]
	return ok
}
