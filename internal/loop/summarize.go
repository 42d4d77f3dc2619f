package loop

import (
	"context"
	"errors"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/agentfleet/agentfleet/internal/window"
)

// prepareContext is the prepare-context hook of a session that sets none:
// the summarize strategy's summary, when the policy asks for it, then the
// policy's truncation (window.Policy.Fit).
func (r *run) prepareContext(ctx context.Context, st *State) (*pipeline.Context, error) {
	p := r.s.cfg.Context
	if p.Strategy == window.StrategySummarize && p.Window > 0 && st.Refused == 0 {
		r.applySummary(ctx, st)
	}
	pctx := &pipeline.Context{SystemPrompt: st.SystemPrompt, Messages: st.Messages, Tools: st.Tools}
	if p.Unbounded(st.Refused) {
		return pctx, nil // nothing to measure: not even the tool definitions
	}
	pctx.Messages, st.Compaction = p.Fit(window.FitInput{
		Messages: st.Messages, RunStart: st.RunStart, FixedBytes: fixedBytes(st), Refused: st.Refused, Tokens: st.Tokens,
	})
	return pctx, nil
}

// applySummary puts the session's summary in place of the messages it
// covers in st, after writing a new one when the plan asks for it
// (window.Policy.PlanSummary). A summary that cannot be written or stored
// is an error event, and the request goes on with the summary it had.
func (r *run) applySummary(ctx context.Context, st *State) {
	p, est := r.s.cfg.Context, st.Tokens
	hist := st.Messages
	plan := p.PlanSummary(window.SummaryInput{
		Messages: hist, RunStart: st.RunStart, FixedBytes: fixedBytes(st), Summary: r.s.currentSummary(), Tokens: est,
	})
	covered, text := plan.Covered, plan.Text
	if plan.Write() {
		next, err := r.writeSummary(ctx, st, text, hist[covered:plan.Cut], plan.Cut)
		if err == nil {
			err = r.s.store.AppendSummary(r.id, next)
		}
		if err != nil {
			r.emit(&agentfleet.Event{Type: agentfleet.EventError, ErrorMessage: "context summary not written: " + err.Error()})
		} else {
			r.s.setSummary(next)
			before := est.Tokens(window.SummarizedBytes(hist, covered, text))
			dropped := plan.Cut - covered
			covered, text = plan.Cut, next.Text
			r.emit(&agentfleet.Event{
				Type: agentfleet.EventContextCompacted, Strategy: window.StrategySummarize, Reason: window.CompactWindow,
				DroppedMessages: dropped, TokensBefore: before, TokensAfter: est.Tokens(window.SummarizedBytes(hist, covered, text)),
			})
		}
	}
	st.Messages, st.RunStart = window.Summarized(hist, st.RunStart, covered, text)
}

// writeSummary asks the model for a summary of msgs, following the
// earlier summary prev.
func (r *run) writeSummary(ctx context.Context, st *State, prev string, msgs []agentfleet.Message, covers int) (*agentfleet.ContextSummary, error) {
	cfg := r.s.cfg
	if cfg.Model == nil {
		return nil, errors.New("no model configured")
	}
	model := cfg.Context.SummaryModel
	if model == "" {
		model = st.Model
	}
	transcript := cfg.Context.Transcript(prev, msgs, st.Tokens)
	req := &Request{Model: model, SystemPrompt: window.SummaryPrompt, Messages: []agentfleet.Message{agentfleet.NewUserMessage(transcript)}, Agent: cfg.Agent, Session: r.s.session}
	cctx, span := r.chatSpan(ctx, req)
	if span != nil {
		span.SetAttributes(tracing.Summary.Bool(true))
	}
	msg, err := cfg.Model.Complete(cctx, req, nil)
	endChat(span, msg, err)
	if err != nil {
		return nil, err
	}
	if msg == nil || agentfleet.JoinText(msg.Content) == "" {
		return nil, errors.New("the model wrote an empty summary")
	}
	r.usage = r.usage.Add(msg.Usage)
	r.s.addSpent(msg.Usage)
	return &agentfleet.ContextSummary{Covers: covers, Text: agentfleet.JoinText(msg.Content), Usage: msg.Usage}, nil
}

// fixedBytes measures what every request of st sends besides its
// messages: the system prompt and the tool definitions.
func fixedBytes(st *State) int {
	var defs []agentfleet.ToolDef
	if st.Tools != nil {
		defs = st.Tools.Defs()
	}
	return window.FixedBytes(st.SystemPrompt, defs)
}

// requestBytes measures req as the estimate counts it.
func requestBytes(req *Request) int {
	return window.RequestBytes(req.SystemPrompt, req.Messages, req.Tools)
}
