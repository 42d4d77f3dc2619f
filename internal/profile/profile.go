// Package profile holds an agent's profile: its prompt, model, tools,
// limits and the agents it may reach, read from an agents file and checked
// with errors that name the file, the agent and the field.
package profile

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/window"
	"go.yaml.in/yaml/v3"
)

// Profile is one agent: its prompt, model, tools and limits. Agents are
// addressed by Name in the second token of the client subjects.
type Profile struct {
	Name         string `yaml:"name" json:"name"`
	SystemPrompt string `yaml:"system_prompt" json:"system_prompt"`
	// Model is the model name sent to the LLM; empty means the default.
	Model string `yaml:"model" json:"model"`
	// Tools lists the tools the agent may see, by name or glob ("get_*");
	// empty means every tool of the fleet.
	Tools []string `yaml:"tools" json:"tools"`
	// Mode is "parallel" (default) or "sequential".
	Mode string `yaml:"mode" json:"mode"`
	// MaxTurns bounds one run; default 25.
	MaxTurns int `yaml:"max_turns" json:"max_turns"`
	// ToolTimeout bounds calls of tools that set no timeout of their own,
	// as a Go duration ("30s"); default 60s.
	ToolTimeout string `yaml:"tool_timeout" json:"tool_timeout"`
	// MaxParallel caps the calls of one parallel batch; default 16.
	MaxParallel int `yaml:"max_parallel" json:"max_parallel"`
	// Stream chooses streaming model calls; default the orchestrator's
	// setting.
	Stream *bool `yaml:"stream" json:"stream"`
	// Approve names the tools, by name or glob, whose calls wait for a
	// person's decision on <prefix>.approve.<agent>.<session>.
	Approve []string `yaml:"approve" json:"approve"`
	// ApproveDestructive makes every call of a tool annotated destructive
	// wait for a decision too.
	ApproveDestructive bool `yaml:"approve_destructive" json:"approve_destructive"`
	// ApprovalTimeout bounds the wait for a decision, as a Go duration;
	// default 10m. A call not decided in time gets an error result.
	ApprovalTimeout string `yaml:"approval_timeout" json:"approval_timeout"`

	// ContextWindow is the model's context window in tokens; default the
	// orchestrator's table of known models (Config.ContextWindow).
	ContextWindow int `yaml:"context_window" json:"context_window"`
	// ReserveOutput is the tokens of the window kept free for the
	// response; default min(4096, context_window/4).
	ReserveOutput int `yaml:"reserve_output" json:"reserve_output"`
	// ContextStrategy says how a history too long for the window is cut
	// down: "truncate" (the default) leaves out the oldest whole turns;
	// "summarize" has the model summarize them once the history fills
	// three quarters of the window, stores the summary in the session's
	// history, and sends it with the recent turns from then on.
	ContextStrategy string `yaml:"context_strategy" json:"context_strategy"`
	// SummaryModel names the model that writes summaries; default the
	// agent's.
	SummaryModel string `yaml:"summary_model" json:"summary_model"`
	// MaxToolResultBytes shortens, in the model's requests only, the text
	// of a tool result longer than it; default a quarter of the window,
	// -1 for no limit.
	MaxToolResultBytes int `yaml:"max_tool_result_bytes" json:"max_tool_result_bytes"`
	// MaxTokensPerRun and MaxTokensPerSession bound the input and output
	// tokens of one run and of all the runs of a session; a run that
	// reaches one stops with stop reason budget. Default none.
	MaxTokensPerRun     int `yaml:"max_tokens_per_run" json:"max_tokens_per_run"`
	MaxTokensPerSession int `yaml:"max_tokens_per_session" json:"max_tokens_per_session"`
	// MaxToolCallsPerRun bounds the tool calls of one run; default none.
	MaxToolCallsPerRun int `yaml:"max_tool_calls_per_run" json:"max_tool_calls_per_run"`
	// MaxCostPerRun, MaxCostPerSession and MaxCostPerAgent bound, in US
	// dollars, what the model calls of one run, of a session, and of all
	// the agent's runs today (UTC, across the fleet) cost, priced by the
	// endpoints' tables; a run that reaches one stops with stop reason
	// budget. Default none.
	MaxCostPerRun     float64 `yaml:"max_cost_per_run" json:"max_cost_per_run"`
	MaxCostPerSession float64 `yaml:"max_cost_per_session" json:"max_cost_per_session"`
	MaxCostPerAgent   float64 `yaml:"max_cost_per_agent" json:"max_cost_per_agent"`
	// Priority is the priority of the agent's model calls in the fleet's
	// shared quota: interactive (granted first) or batch; default
	// between the two. A run's input may choose its own.
	Priority string `yaml:"priority" json:"priority"`

	// Agents lists the agents this one may ask as tools, by name: each
	// becomes a tool ask_<name> {message, session?} whose result is that
	// agent's final answer (package delegate).
	Agents []string `yaml:"agents" json:"agents"`
	// AgentTimeout bounds the wait for one such answer, as a Go duration;
	// default 5m. A child not done in time is aborted and the call gets
	// an error result.
	AgentTimeout string `yaml:"agent_timeout" json:"agent_timeout"`

	// RemoteAgents lists agents reached over A2A that this one may ask
	// as tools, each ask_<name> (remote.go, package a2aremote).
	RemoteAgents []RemoteAgent `yaml:"remote_agents" json:"remote_agents"`

	// Handoffs lists the agents this one may hand a conversation over
	// to, by name: each becomes a tool transfer_to_<name> {reason?} that
	// ends the run and has that agent answer the session's next messages
	// (handoff.go).
	Handoffs []string `yaml:"handoffs" json:"handoffs"`

	// ForkModels lists the models a fork of the agent's sessions may
	// choose in place of Model (a replay against another model,
	// forkmodels.go); default none: a fork keeps the agent's model.
	ForkModels []string `yaml:"fork_models" json:"fork_models"`

	// History bounds each session's stored history (history.go); default
	// none.
	History *History `yaml:"history" json:"history"`

	toolTimeout  time.Duration
	agentTimeout time.Duration
	approval     approval.Policy
}

// Context returns the profile's context policy; tokens is the context
// window of a profile that sets none (0: unknown).
func (p *Profile) Context(tokens int) window.Policy {
	if p.ContextWindow > 0 {
		tokens = p.ContextWindow
	}
	return window.Policy{
		Strategy: p.ContextStrategy, SummaryModel: p.SummaryModel,
		Window: tokens, ReserveOutput: p.ReserveOutput, MaxToolResultBytes: p.MaxToolResultBytes,
	}
}

// Budget returns the profile's budgets.
func (p *Profile) Budget() window.Budget {
	return window.Budget{MaxTokensPerRun: p.MaxTokensPerRun, MaxTokensPerSession: p.MaxTokensPerSession, MaxToolCallsPerRun: p.MaxToolCallsPerRun,
		MaxCostPerRun: p.MaxCostPerRun, MaxCostPerSession: p.MaxCostPerSession, MaxCostPerAgent: p.MaxCostPerAgent}
}

// Approval returns the profile's approval policy.
func (p *Profile) Approval() approval.Policy { return p.approval }

// DefaultToolTimeout is the bound of calls of tools that set none, from
// tool_timeout (0: the orchestrator's default).
func (p *Profile) DefaultToolTimeout() time.Duration { return p.toolTimeout }

// AskTimeout bounds the wait for an asked agent's answer, from
// agent_timeout.
func (p *Profile) AskTimeout() time.Duration { return p.agentTimeout }

// Default is the one profile of an orchestrator started without a
// config file: every tool, parallel execution.
func Default() Profile {
	return Profile{Name: "default", Mode: string(pipeline.Parallel)}
}

// Allows reports whether the profile lets its agent see the tool name.
func (p *Profile) Allows(name string) bool {
	if len(p.Tools) == 0 {
		return true
	}
	for _, pat := range p.Tools {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// check validates p and fills in its defaults. The error names the profile
// and the field.
func (p *Profile) check(i int) error {
	where := fmt.Sprintf("agent %d", i+1)
	if p.Name != "" {
		where = fmt.Sprintf("agent %q", p.Name)
	}
	if err := bus.CheckToken("agent", p.Name); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	switch p.Mode {
	case "":
		p.Mode = string(pipeline.Parallel)
	case string(pipeline.Parallel), string(pipeline.Sequential):
	default:
		return fmt.Errorf("%s: mode %q is not parallel or sequential", where, p.Mode)
	}
	for _, pat := range p.Tools {
		if _, err := path.Match(pat, ""); err != nil {
			return fmt.Errorf("%s: tool pattern %q: %w", where, pat, err)
		}
	}
	if p.MaxTurns < 0 {
		return fmt.Errorf("%s: max_turns %d is negative", where, p.MaxTurns)
	}
	if p.MaxParallel < 0 {
		return fmt.Errorf("%s: max_parallel %d is negative", where, p.MaxParallel)
	}
	if p.ToolTimeout != "" {
		d, err := time.ParseDuration(p.ToolTimeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: tool_timeout %q is not a positive duration such as \"30s\"", where, p.ToolTimeout)
		}
		p.toolTimeout = d
	}
	switch p.ContextStrategy {
	case "":
		p.ContextStrategy = window.StrategyTruncate
	case window.StrategyTruncate, window.StrategySummarize:
	default:
		return fmt.Errorf("%s: context_strategy %q is not truncate or summarize", where, p.ContextStrategy)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"context_window", p.ContextWindow}, {"reserve_output", p.ReserveOutput},
		{"max_tokens_per_run", p.MaxTokensPerRun}, {"max_tokens_per_session", p.MaxTokensPerSession},
		{"max_tool_calls_per_run", p.MaxToolCallsPerRun},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: %s %d is negative", where, f.name, f.v)
		}
	}
	if err := p.checkQuota(where); err != nil {
		return err
	}
	if err := p.checkHistory(where); err != nil {
		return err
	}
	if p.MaxToolResultBytes < -1 {
		return fmt.Errorf("%s: max_tool_result_bytes %d is below -1 (no limit)", where, p.MaxToolResultBytes)
	}
	if p.ContextWindow > 0 && p.ReserveOutput >= p.ContextWindow {
		return fmt.Errorf("%s: reserve_output %d leaves nothing of context_window %d", where, p.ReserveOutput, p.ContextWindow)
	}
	p.approval = approval.Policy{Tools: p.Approve, Destructive: p.ApproveDestructive}
	if p.ApprovalTimeout != "" {
		d, err := time.ParseDuration(p.ApprovalTimeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: approval_timeout %q is not a positive duration such as \"10m\"", where, p.ApprovalTimeout)
		}
		p.approval.Timeout = d
	}
	if err := p.approval.Check(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := p.checkForkModels(); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	p.agentTimeout = delegate.DefaultTimeout
	if p.AgentTimeout != "" {
		d, err := time.ParseDuration(p.AgentTimeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s: agent_timeout %q is not a positive duration such as \"5m\"", where, p.AgentTimeout)
		}
		p.agentTimeout = d
	}
	return nil
}

// checkAgents validates the agents p may ask and those it may hand over
// to, known holding every agent's name: each defined, not p itself, listed
// once.
func (p *Profile) checkAgents(known map[string]bool) error {
	if err := p.checkList("agents", "ask", p.Agents, known); err != nil {
		return err
	}
	if err := p.checkRemote(); err != nil {
		return err
	}
	return p.checkList("handoffs", "hand over to", p.Handoffs, known)
}

func (p *Profile) checkList(field, verb string, names []string, known map[string]bool) error {
	listed := map[string]bool{}
	for i, name := range names {
		switch {
		case name == p.Name:
			return fmt.Errorf("agent %q: %s entry %d names the agent itself: an agent may not %s itself", p.Name, field, i+1, verb)
		case !known[name]:
			return fmt.Errorf("agent %q: %s entry %d: no agent %q is defined (the agents are %s)", p.Name, field, i+1, name, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		case listed[name]:
			return fmt.Errorf("agent %q: %s entry %d: agent %q is listed twice", p.Name, field, i+1, name)
		}
		listed[name] = true
	}
	return nil
}

// File is the layout of an agents file (YAML or JSON).
type File struct {
	Agents    []Profile  `yaml:"agents" json:"agents"`
	Endpoints []Endpoint `yaml:"endpoints" json:"endpoints"`
}

// Load reads agent profiles from a YAML or JSON file. Unknown fields,
// duplicate names and bad values are errors that name the file, the agent
// and the field.
func Load(file string) ([]Profile, error) {
	c, err := LoadConfig(file)
	if err != nil {
		return nil, err
	}
	return c.Agents, nil
}

// LoadConfig reads a whole agents file, endpoints included, as Load does.
func LoadConfig(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("agent profiles: %w", err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("agent profiles %s: %w", file, err)
	}
	return c, nil
}

// Parse parses agent profiles from YAML or JSON.
func Parse(data []byte) ([]Profile, error) {
	c, err := ParseConfig(data)
	if err != nil {
		return nil, err
	}
	return c.Agents, nil
}

// ParseConfig parses a whole agents file from YAML or JSON: the agents
// and the model endpoints; with endpoints, every agent's model must be
// one of theirs.
func ParseConfig(data []byte) (*Config, error) {
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if len(f.Agents) == 0 {
		return nil, errors.New(`no agents: the file must hold "agents:" with at least one profile`)
	}
	ps, err := Check(f.Agents)
	if err != nil {
		return nil, err
	}
	c := &Config{Agents: ps, Endpoints: f.Endpoints}
	if err := c.checkModels(); err != nil {
		return nil, err
	}
	return c, nil
}

// Check validates the profiles ps and fills in their defaults: each
// valid, each name once, each agent it names defined.
func Check(ps []Profile) ([]Profile, error) {
	seen := map[string]bool{}
	for i := range ps {
		if err := ps[i].check(i); err != nil {
			return nil, err
		}
		if seen[ps[i].Name] {
			return nil, fmt.Errorf("agent %q is defined twice", ps[i].Name)
		}
		seen[ps[i].Name] = true
	}
	for i := range ps {
		if err := ps[i].checkAgents(seen); err != nil {
			return nil, err
		}
	}
	return ps, nil
}
