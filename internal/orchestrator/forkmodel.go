package orchestrator

import (
	"fmt"

	"github.com/agentfleet/agentfleet/internal/loop"
)

// A fork may name the model of the new session's runs (a replay against
// another model): the orchestrator takes it only when the agent's profile
// allows it (profile.ForkModel), the forked record stores it, and the
// session's loop is built from a template of its agent with that model,
// the rest of the profile unchanged. The last forked record decides.

// forkModel is the fork server's check of a requested model
// (timetravel.Config.Model).
func (o *Orchestrator) forkModel(agent, model string) error {
	a := o.agents[agent]
	if a == nil {
		return fmt.Errorf("unknown agent %q", agent)
	}
	return a.profile.ForkModel(model)
}

// loopTemplate returns the template the session's loop is built from: the
// serving agent's, with the model of the session's fork when it has one,
// its agent serves it, and its profile still allows that model.
func (s *session) loopTemplate() *loop.Template {
	a := s.serves()
	if s.model == "" || a != s.agent || s.model == a.profile.Model {
		return a.template(s.o)
	}
	if err := a.profile.ForkModel(s.model); err != nil {
		s.o.log.Warn("the model of a forked session is no longer allowed: the agent's is used", "agent", a.profile.Name, "session", s.name, "err", err)
		return a.template(s.o)
	}
	return a.modelTemplate(s.o, s.model)
}

// modelTemplate returns the agent's template with model name, made once
// per model: the model of Config.ModelFor for the profile with that model,
// else Config.Model.
func (a *agent) modelTemplate(o *Orchestrator, name string) *loop.Template {
	a.template(o) // the sink its sessions share
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.forks[name]; t != nil {
		return t
	}
	model := o.cfg.Model
	if o.cfg.ModelFor != nil {
		p := a.profile
		p.Model = name
		if m := o.cfg.ModelFor(&p); m != nil {
			model = m
		}
	}
	if a.forks == nil {
		a.forks = map[string]*loop.Template{}
	}
	a.forks[name] = a.newTemplate(o, name, model)
	return a.forks[name]
}
