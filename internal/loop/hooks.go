package loop

import (
	"context"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// State is the session's runtime state as the prepare-context hook sees it
// (spec agentState). Messages is a snapshot: the hook may keep or change it.
type State struct {
	Agent, Session string
	SystemPrompt   string
	Model          string
	Tools          *tools.Store
	Messages       []agentfleet.Message
}

// PrepareContextFunc builds the context of one turn from the session state
// (spec prepareContext): it may filter tools, change the system prompt or
// inject, prune and reorder messages. An error ends the run with stop reason
// error.
type PrepareContextFunc func(ctx context.Context, st *State) (*pipeline.Context, error)

// FormatFunc turns a turn's context into the model request (spec
// formatMsgForLLM). The model adapter converts it to its provider's form.
type FormatFunc func(st *State, pctx *pipeline.Context) (*Request, error)

// DefaultPrepareContext is the spec's default: the state as it is.
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
