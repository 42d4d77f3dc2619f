// Package tools is the tool registry of spec section 4: per-agent stores
// that keep tools in registration order, with lookup by name.
package tools

import (
	"fmt"
	"sync"

	"github.com/agentfleet/agentfleet"
)

// Store is one agent's tool set (spec toolStore). Tools keep their
// registration order; lookup by name is O(1). Stores are independent of each
// other. A Store is safe for concurrent use.
type Store struct {
	name string

	mu      sync.RWMutex
	entries map[string]*entry
	order   []string
}

type entry struct {
	tool   *agentfleet.Tool
	schema *Schema
}

// NewStore returns an empty store named name (for logs and errors).
func NewStore(name string) *Store {
	return &Store{name: name, entries: make(map[string]*entry)}
}

// Name returns the store's name.
func (s *Store) Name() string { return s.name }

// Register adds t. It fails if a tool of that name is already registered, if
// the name is empty, or if the input schema does not compile; the error names
// the tool.
func (s *Store) Register(t *agentfleet.Tool) error {
	if t == nil || t.Name == "" {
		return fmt.Errorf("tools %s: a tool must have a name", s.name)
	}
	sc, err := CompileSchema(t.InputSchema)
	if err != nil {
		return fmt.Errorf("tools %s: tool %q: %w", s.name, t.Name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[t.Name]; ok {
		return fmt.Errorf("tools %s: tool %q is already registered", s.name, t.Name)
	}
	s.entries[t.Name] = &entry{tool: t, schema: sc}
	s.order = append(s.order, t.Name)
	return nil
}

// MustRegister is Register that panics on error, for static tool sets.
func (s *Store) MustRegister(tools ...*agentfleet.Tool) {
	for _, t := range tools {
		if err := s.Register(t); err != nil {
			panic(err)
		}
	}
}

// Get returns the tool named name.
func (s *Store) Get(name string) (*agentfleet.Tool, bool) {
	s.mu.RLock()
	e, ok := s.entries[name]
	s.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// List returns the tools in registration order. The slice is the caller's.
func (s *Store) List() []*agentfleet.Tool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*agentfleet.Tool, len(s.order))
	for i, n := range s.order {
		out[i] = s.entries[n].tool
	}
	return out
}

// Defs returns the definitions of the tools, in registration order.
func (s *Store) Defs() []agentfleet.ToolDef {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]agentfleet.ToolDef, len(s.order))
	for i, n := range s.order {
		out[i] = s.entries[n].tool.ToolDef
	}
	return out
}

// Names returns the names of the tools, in registration order.
func (s *Store) Names() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.order...)
}

// Len returns the number of tools.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.order)
}

// Remove removes the tool named name and reports whether it was there.
func (s *Store) Remove(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.entries[name]; !ok {
		return false
	}
	delete(s.entries, name)
	for i, n := range s.order {
		if n == name {
			s.order = append(s.order[:i:i], s.order[i+1:]...)
			break
		}
	}
	return true
}

// Clear removes every tool (spec clearTools). Other stores are unaffected.
func (s *Store) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = make(map[string]*entry)
	s.order = nil
}

// Filter returns a new store holding the tools for which keep returns true,
// in the same order, sharing their compiled schemas. It is what a
// prepare-context hook uses to narrow the tools of one turn.
func (s *Store) Filter(name string, keep func(*agentfleet.Tool) bool) *Store {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := NewStore(name)
	for _, n := range s.order {
		e := s.entries[n]
		if keep(e.tool) {
			out.entries[n] = e
			out.order = append(out.order, n)
		}
	}
	return out
}

// ValidateArguments checks args for the tool named name: with the tool's own
// validator when it has one, else against its input schema.
func (s *Store) ValidateArguments(name string, args map[string]any) error {
	s.mu.RLock()
	e, ok := s.entries[name]
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("Tool %s not found", name)
	}
	if e.tool.ValidateArguments != nil {
		return e.tool.ValidateArguments(args)
	}
	return e.schema.Validate(args)
}
