package tools

import (
	"context"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// ListToolsName is the name of the tool that lists a store's tools.
const ListToolsName = "list_tools"

// ListTool returns the list_tools tool bound to store (spec listTool(store)):
// its text lists every tool of the store as "name: label — description", in
// registration order. It runs in-process, so each agent sees only its own
// tools.
func ListTool(store *Store) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        ListToolsName,
			Label:       "List Tools",
			Description: "List the tools available to this agent, with their labels and descriptions. Use it to discover tools and to avoid name collisions before writing a new one.",
			InputSchema: []byte(`{"type":"object","properties":{},"additionalProperties":false}`),
			Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
			Parallel:    true,
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			var b strings.Builder
			b.WriteString("Available tools:")
			names := make([]string, 0, store.Len())
			for _, t := range store.List() {
				names = append(names, t.Name)
				b.WriteString("\n- ")
				b.WriteString(t.Name)
				b.WriteString(": ")
				label := t.Label
				if label == "" {
					label = t.Name
				}
				b.WriteString(label)
				b.WriteString(" — ")
				b.WriteString(t.Description)
			}
			return &agentfleet.ToolResult{
				Content: []agentfleet.Content{agentfleet.Text(b.String())},
				Details: map[string]any{"tools": names},
			}, nil
		}),
	}
}

// NewAgentStore returns a store named name holding tools, in order, followed
// by its own list_tools (spec register_all_tools).
func NewAgentStore(name string, tools ...*agentfleet.Tool) (*Store, error) {
	s := NewStore(name)
	for _, t := range tools {
		if err := s.Register(t); err != nil {
			return nil, err
		}
	}
	if _, ok := s.Get(ListToolsName); !ok {
		if err := s.Register(ListTool(s)); err != nil {
			return nil, err
		}
	}
	return s, nil
}
