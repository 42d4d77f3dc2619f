package orchestrator

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownAgent is matched, with errors.Is, by the error of every request
// that names an agent this orchestrator has no profile for.
var ErrUnknownAgent = errors.New("unknown agent")

// UnknownAgentError is the error of a request that names an agent this
// orchestrator has no profile for. Its text names the agent and the ones
// there are: unknown agent "ghost" (agents: default, ops).
type UnknownAgentError struct {
	// Agent is the name asked for.
	Agent string
	// Agents are the names of the agents there are, sorted.
	Agents []string
}

// Error names the agent asked for and the agents there are.
func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("unknown agent %q (agents: %s)", e.Agent, strings.Join(e.Agents, ", "))
}

// Is reports whether target is ErrUnknownAgent.
func (e *UnknownAgentError) Is(target error) bool { return target == ErrUnknownAgent }

// CheckAgent returns nil if the orchestrator has an agent named name, and
// an *UnknownAgentError otherwise.
func (o *Orchestrator) CheckAgent(name string) error {
	_, err := o.lookup(name)
	return err
}

// lookup returns the agent named name, or an *UnknownAgentError.
func (o *Orchestrator) lookup(name string) (*agent, error) {
	if a, ok := o.agents[name]; ok {
		return a, nil
	}
	return nil, &UnknownAgentError{Agent: name, Agents: o.Agents()}
}
