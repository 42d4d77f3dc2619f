package main

import (
	"flag"
	"slices"

	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/httpauth"
)

// takes says whether c itself takes the command flag name.
func (c *command) takes(name string) bool {
	switch name {
	case "json":
		return c.json
	case "id":
		return c.id
	case "revision":
		return c.revision
	case "replace":
		return c.replace
	case "since":
		return c.since
	case "http", "read-only", "trace-url":
		return c.dashboard
	}
	if slices.Contains(httpauth.FlagNames, name) || slices.Contains(dashboard.LimitFlagNames, name) {
		return c.dashboard
	}
	switch name {
	case "reject", "reason", "args":
		return c.decision
	case "o":
		return c.name == "call"
	case "at", "before-run":
		return c.fork
	case "model", "profile", "into":
		return c.replay
	}
	return false
}

// anyTakes says whether c or one of its subcommands takes the command flag
// name.
func (c *command) anyTakes(name string) bool {
	if c.takes(name) {
		return true
	}
	for _, s := range c.subs {
		if s.takes(name) {
			return true
		}
	}
	return false
}

// commandFlags are the flags that only some commands take.
var commandFlags = slices.Concat([]string{"json", "id", "revision", "replace", "since", "http", "read-only", "trace-url", "reject", "reason", "args", "o", "at", "before-run", "model", "profile", "into"},
	httpauth.FlagNames, dashboard.LimitFlagNames)

// forkFlags registers the flags of fork on fs.
func (m *Main) forkFlags(fs *flag.FlagSet) {
	fs.Uint64Var(&m.At, "at", 0, "fork after this stored message (a sequence agentctl history prints), all of it included")
	fs.StringVar(&m.BeforeRun, "before-run", "", "fork before the first record of this run")
}

// replayFlags registers the flags of replay on fs.
func (m *Main) replayFlags(fs *flag.FlagSet) {
	fs.StringVar(&m.Model, "model", "", "re-run with this model, one of the agent's fork_models (default: the agent's)")
	fs.StringVar(&m.Profile, "profile", "", "take the model from this profile file (YAML or JSON; only model, and name, may be set)")
	fs.StringVar(&m.Into, "into", "", "the new session (default <session>-replay-<8 hex>); refused if it exists")
}
