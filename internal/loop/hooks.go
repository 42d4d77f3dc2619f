package loop

import (
	"context"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
	"github.com/agentfleet/agentfleet/internal/window"
)

// State is the session's runtime state as the prepare-context hook sees it
// (spec agentState). Messages is the session's history as the turn begins,
// shared, not copied: the hook may keep it or build another slice, but must
// not change its elements in place.
type State struct {
	Agent, Session string
	// RunID is the current run's.
	RunID        string
	SystemPrompt string
	Model        string
	Tools        *tools.Store
	Messages     []agentfleet.Message
	// RunStart is the index in Messages of the current run's first
	// message.
	RunStart int
	// Tokens is the session's token estimate, calibrated by the usage of
	// its last model response.
	Tokens *window.Estimator
	// Refused, when not zero, is the estimated tokens of the messages of
	// this turn's request that the model refused as longer than its
	// context window: the hook is called again for a shorter one.
	Refused int
	// Compaction is set by a hook that left out or shortened messages; the
	// loop emits it as a context.compacted event.
	Compaction *window.Compaction
}

// PrepareContextFunc builds the context of one turn from the session state
// (spec prepareContext): it may filter tools, change the system prompt or
// inject, prune and reorder messages. An error ends the run with stop reason
// error.
type PrepareContextFunc func(ctx context.Context, st *State) (*pipeline.Context, error)

// FormatFunc turns a turn's context into the model request (spec
// formatMsgForLLM). The model adapter converts it to its provider's form.
type FormatFunc func(st *State, pctx *pipeline.Context) (*Request, error)

// DefaultPrepareContext is the spec's default: the state as it is. A
// Session whose Config has no PrepareContext applies its context policy
// (Config.Context) instead, which sends the state as it is as long as the
// window is unknown and no request was refused.
func DefaultPrepareContext(_ context.Context, st *State) (*pipeline.Context, error) {
	return &pipeline.Context{SystemPrompt: st.SystemPrompt, Messages: st.Messages, Tools: st.Tools}, nil
}

// DefaultFormat puts the context's system prompt, messages and tool
// definitions into a request for the state's model.
func DefaultFormat(st *State, pctx *pipeline.Context) (*Request, error) {
	req := &Request{
		Model: st.Model, SystemPrompt: pctx.SystemPrompt, Messages: pctx.Messages,
		Agent: st.Agent, Session: st.Session,
	}
	if pctx.Tools != nil {
		req.Tools = pctx.Tools.Defs()
	}
	return req, nil
}
