package loop

import (
	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// Template is the part of a Config that the sessions of one agent share:
// its defaults filled in once, read and never written after. A session
// built from a Template (Template.New) holds a pointer to it and only what
// is its own (Own), so that an idle session costs its history and little
// more: an orchestrator holds a million of them.
type Template struct {
	cfg Config
}

// NewTemplate returns cfg made ready to be shared. Its Session, Store, Sink,
// History and Summary are ignored (they are a session's own, Own); its
// Pipeline's Executor and Before are what a session gets when its Own does
// not set them.
func NewTemplate(cfg Config) *Template {
	if cfg.SystemPrompt == "" {
		cfg.SystemPrompt = DefaultSystemPrompt
	}
	if cfg.Tools == nil {
		cfg.Tools = tools.NewStore(cfg.Agent)
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.Format == nil {
		cfg.Format = DefaultFormat
	}
	cfg.Session, cfg.Store, cfg.Sink, cfg.History, cfg.Summary = "", nil, nil, nil, nil
	return &Template{cfg: cfg}
}

// Own is what one session built from a Template has of its own. Session is
// required; every other field is optional, with the default of the Config
// field of the same name.
type Own struct {
	Session string
	Store   Store
	Sink    Sink
	// Executor and Before, when set, replace the template's
	// Pipeline.Executor and Pipeline.Before for this session's calls.
	Executor pipeline.Executor
	Before   pipeline.BeforeHook
	History  []Entry
	Summary  *agentfleet.ContextSummary
}

// own is cfg's own part, for New.
func (cfg *Config) own() Own {
	return Own{
		Session: cfg.Session, Store: cfg.Store, Sink: cfg.Sink,
		Executor: cfg.Pipeline.Executor, Before: cfg.Pipeline.Before,
		History: cfg.History, Summary: cfg.Summary,
	}
}

// pipelineConfig is the pipeline's configuration for a batch of the
// session's calls: the template's, with the session's executor and before
// hook.
func (s *Session) pipelineConfig() pipeline.Config {
	pc := s.cfg.Pipeline
	if s.exec != nil {
		pc.Executor = s.exec
	}
	if s.before != nil {
		pc.Before = s.before
	}
	return pc
}
