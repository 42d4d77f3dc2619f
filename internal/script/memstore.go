package script

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// MemoryStore is a Store in memory, for tests and single-process setups.
// Its revisions count up across all names, like a KV bucket's. The zero
// value is not usable; call NewMemoryStore.
type MemoryStore struct {
	mu   sync.Mutex
	rev  uint64
	defs map[string]*Definition
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore { return &MemoryStore{defs: map[string]*Definition{}} }

// Put implements Store.
func (m *MemoryStore) Put(_ context.Context, def *Definition) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.defs[def.Name]
	switch {
	case def.Revision == 0 && cur != nil:
		return 0, fmt.Errorf("put %s: %w", def.Name, ErrExists)
	case def.Revision != 0 && (cur == nil || cur.Revision != def.Revision):
		return 0, fmt.Errorf("put %s at revision %d: %w", def.Name, def.Revision, ErrConflict)
	}
	m.rev++
	d := *def
	d.Replace = false
	d.Revision, d.Updated = m.rev, time.Now().UTC()
	m.defs[def.Name] = &d
	return m.rev, nil
}

// Get implements Store.
func (m *MemoryStore) Get(_ context.Context, name string) (*Definition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.defs[name]
	if d == nil {
		return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	c := *d
	return &c, nil
}

// Delete implements Store.
func (m *MemoryStore) Delete(_ context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.defs[name] == nil {
		return fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	m.rev++
	delete(m.defs, name)
	return nil
}

// List implements Store.
func (m *MemoryStore) List(_ context.Context) ([]*Definition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Definition, 0, len(m.defs))
	for _, name := range slices.Sorted(maps.Keys(m.defs)) {
		c := *m.defs[name]
		out = append(out, &c)
	}
	return out, nil
}
