package orchestrator

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	busclient "github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/google/uuid"
)

// Agents returns the names of the agents, sorted.
func (o *Orchestrator) Agents() []string { return slices.Sorted(maps.Keys(o.agents)) }

// DirectApprovalText is the result of a direct call of a tool whose calls
// wait for approval.
const DirectApprovalText = "Tool %s: its calls need a person's approval, which a call outside a run cannot wait for; ask agent %s to make the call instead"

// DirectAskText is the result of a direct call of an ask tool.
const DirectAskText = "Tool %s asks agent %s on behalf of a run, and a call outside a run has none; ask agent %s directly (ask_<agent> on /mcp), or ask agent %s to make the call"

// DirectTransferText is the result of a direct call of a transfer tool.
const DirectTransferText = "Tool %s hands a conversation over to agent %s at the end of a run, and a call outside a run has none; ask agent %s to hand over instead"

// CallTool runs one call of agent's tools for a client outside any run
// (an MCP client), through the same pipeline as the model's calls: only
// the tools the profile allows, the arguments validated, the hooks, the
// profile's timeouts, tool events on session's subjects (run id
// "direct-…") and the metrics. A call that the profile puts to a person's
// approval is refused (DirectApprovalText). progress, when not nil, receives the
// call's partial results. It fails only for an unknown agent or session
// name; everything else is an error outcome.
func (o *Orchestrator) CallTool(ctx context.Context, agentName, session string, call agentfleet.ToolCall, progress func(partial any)) (*pipeline.Outcome, error) {
	a, err := o.lookup(agentName)
	if err != nil {
		return nil, err
	}
	if err := bus.CheckToken("session", session); err != nil {
		return nil, err
	}
	if o.client == nil {
		return nil, fmt.Errorf("the orchestrator is not started")
	}
	if call.ID == "" {
		call.ID = "direct-" + uuid.NewString()
	}
	p := &a.profile
	runID := "direct-" + uuid.NewString()
	sink := o.sink()
	before := o.cfg.Before
	var nested func([]*agentfleet.Tool) (allowed, gated []string)
	if pol := p.Approval(); pol.Enabled() {
		// Nor may a scripted tool called directly reach one through
		// call_tool.
		nested = pol.Nested
		// A call outside any run has no stored run to wait in, and no
		// model to tell: one that needs approval is refused.
		before = pipeline.Chain(before, func(_ context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
			if pol.Needs(in.Tool) {
				return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(DirectApprovalText, in.Call.Name, p.Name)}, nil
			}
			return nil, nil
		})
	}
	if len(a.asks) > 0 {
		// An ask tool's child belongs to a parent run, which a direct call
		// has none of.
		before = pipeline.Chain(before, func(_ context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
			if target, ok := a.asks[in.Call.Name]; ok {
				return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(DirectAskText, in.Call.Name, target, target, p.Name)}, nil
			}
			return nil, nil
		})
	}
	if len(a.transfers) > 0 {
		// A handoff ends a run, and only a run may hand its session over.
		before = pipeline.Chain(before, func(_ context.Context, in *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
			if target, ok := a.transfers[in.Call.Name]; ok {
				return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(DirectTransferText, in.Call.Name, target, p.Name)}, nil
			}
			return nil, nil
		})
	}
	pipe := pipeline.New(pipeline.Config{
		MaxParallel: p.MaxParallel, DefaultTimeout: p.DefaultToolTimeout(),
		Executor: o.payloads(fleetexec.Executor{Client: o.client}), Before: before, After: o.cfg.After, Nested: nested,
		MaxProgressBytes: maxProgressBytes(o.cfg.DurableConfig.EventsMaxBytes),
		Agent:            p.Name, Session: session, RunID: runID,
		Sink: agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
			e.Agent, e.Session, e.RunID = p.Name, session, runID
			if e.Time.IsZero() {
				e.Time = time.Now().UTC()
			}
			if e.Type == agentfleet.EventToolUpdate && progress != nil {
				progress(e.Partial)
			}
			sink.Emit(e)
		}),
	})
	pctx := &pipeline.Context{SystemPrompt: p.SystemPrompt, Tools: a.store}
	batch := pipe.Run(ctx, pctx, &agentfleet.AssistantMessage{}, []agentfleet.ToolCall{call})
	return batch.Outcomes[0], nil
}

// Ask sends text to agent's session through the fleet's ask subject, so
// that whichever orchestrator owns the session runs the turn, and waits
// for its final message; the session's events go to onEvent meanwhile.
// When ctx ends first, the run is aborted.
func (o *Orchestrator) Ask(ctx context.Context, agentName, session, text string, onEvent func(*agentfleet.Event)) (*agentfleet.AssistantMessage, error) {
	if err := o.CheckAgent(agentName); err != nil {
		return nil, err
	}
	if err := bus.CheckToken("session", session); err != nil {
		return nil, err
	}
	return busclient.Ask(ctx, o.nc, o.subjects, agentName, session, text, onEvent)
}
