package loop

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tracing"
)

// StrategySummarize is the strategy of a ContextPolicy that has the model
// summarize the oldest part of the history once it fills three quarters of
// the window, and sends the summary and the recent turns from then on.
const StrategySummarize = "summarize"

// SummaryPrompt is the system prompt of the request that asks for a
// summary.
const SummaryPrompt = "You summarize conversations between a user and an assistant that uses tools. Write a concise summary of the conversation you are given (and of the earlier summary it starts with, if any) that keeps every fact, decision, open question and tool result the assistant may need to go on. Answer with the summary only."

// SummaryLead introduces the summary in the requests that send it in place
// of the messages it covers.
const SummaryLead = "Summary of the earlier conversation:\n"

// summaryResultBytes bounds each tool result in the transcript given to
// the summarizer.
const summaryResultBytes = 2000

// prepareContext is the prepare-context hook of a session that sets none:
// the summarize strategy's summary, when the policy asks for it, then the
// policy's truncation.
func (r *run) prepareContext(ctx context.Context, st *State) (*pipeline.Context, error) {
	p := r.s.cfg.Context
	if p.Strategy == StrategySummarize && p.Window > 0 && st.Refused == 0 {
		r.applySummary(ctx, st)
	}
	return p.Prepare(ctx, st)
}

// applySummary puts the session's summary in place of the messages it
// covers in st, after writing a new one when the rest passes three
// quarters of the budget: the summary then covers every turn before the
// current run except the most recent ones that fit in half the budget. A
// summary that cannot be written or stored is an error event, and the
// request goes on with the summary it had.
func (r *run) applySummary(ctx context.Context, st *State) {
	p, est := r.s.cfg.Context, st.Tokens
	hist, runStart := st.Messages, st.RunStart
	budget := p.Budget(est.Tokens(fixedBytes(st)))
	sum := r.s.currentSummary()
	covered, text := 0, ""
	if sum != nil && sum.Covers <= runStart {
		covered, text = sum.Covers, sum.Text
	}
	if est.Tokens(summarizedBytes(hist, covered, text)) > budget*3/4 {
		cut, tail := runStart, messagesBytes(hist[runStart:])
		for i := runStart - 1; i > covered; i-- {
			tail += MessageBytes(hist[i])
			if est.Tokens(tail) > budget/2 {
				break
			}
			if _, ok := hist[i].(*agentfleet.UserMessage); ok {
				cut = i
			}
		}
		if cut > covered {
			next, err := r.writeSummary(ctx, st, text, hist[covered:cut], cut)
			if err == nil {
				err = r.s.cfg.Store.AppendSummary(r.id, next)
			}
			if err != nil {
				r.emit(&agentfleet.Event{Type: agentfleet.EventError, ErrorMessage: "context summary not written: " + err.Error()})
			} else {
				r.s.setSummary(next)
				before := est.Tokens(summarizedBytes(hist, covered, text))
				dropped := cut - covered
				covered, text = cut, next.Text
				r.emit(&agentfleet.Event{
					Type: agentfleet.EventContextCompacted, Strategy: StrategySummarize, Reason: CompactWindow,
					DroppedMessages: dropped, TokensBefore: before, TokensAfter: est.Tokens(summarizedBytes(hist, covered, text)),
				})
			}
		}
	}
	if covered > 0 {
		msgs := make([]agentfleet.Message, 0, len(hist)-covered+1)
		msgs = append(msgs, agentfleet.NewUserMessage(SummaryLead+text))
		st.Messages = append(msgs, hist[covered:]...)
		st.RunStart = runStart - covered + 1
	}
}

// writeSummary asks the model for a summary of msgs, following the
// earlier summary prev.
func (r *run) writeSummary(ctx context.Context, st *State, prev string, msgs []agentfleet.Message, covers int) (*agentfleet.ContextSummary, error) {
	cfg := &r.s.cfg
	if cfg.Model == nil {
		return nil, errors.New("no model configured")
	}
	var b strings.Builder
	if prev != "" {
		b.WriteString("Earlier summary:\n" + prev + "\n\nThe conversation since:\n")
	}
	// The transcript fills what the window has besides the prompt and the
	// reserve for the summary.
	limit := st.Tokens.Bytes(cfg.Context.Budget(st.Tokens.Tokens(len(SummaryPrompt)+2*messageOverhead+len(prev)))) - len(prev)
	for _, m := range msgs {
		if b.Len() > limit {
			b.WriteString("[… the rest of the transcript left out]\n")
			break
		}
		writeTranscript(&b, m)
	}
	model := cfg.Context.SummaryModel
	if model == "" {
		model = st.Model
	}
	req := &Request{Model: model, SystemPrompt: SummaryPrompt, Messages: []agentfleet.Message{agentfleet.NewUserMessage(b.String())}, Agent: cfg.Agent, Session: cfg.Session}
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
	r.s.addSpent(tokensOf(msg.Usage))
	return &agentfleet.ContextSummary{Covers: covers, Text: agentfleet.JoinText(msg.Content), Usage: msg.Usage}, nil
}

// writeTranscript writes m as a line of the transcript the summarizer
// reads.
func writeTranscript(b *strings.Builder, m agentfleet.Message) {
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		fmt.Fprintf(b, "user: %s\n", agentfleet.JoinText(m.Content))
	case *agentfleet.AssistantMessage:
		fmt.Fprintf(b, "assistant: %s\n", agentfleet.JoinText(m.Content))
		for _, c := range m.ToolCalls() {
			fmt.Fprintf(b, "assistant called %s(%s)\n", c.Name, c.Arguments)
		}
	case *agentfleet.ToolResultMessage:
		t := agentfleet.JoinText(m.Content)
		if len(t) > summaryResultBytes {
			t = t[:summaryResultBytes] + " […]"
		}
		fmt.Fprintf(b, "tool %s returned: %s\n", m.ToolName, t)
	}
}

// summarizedBytes measures the messages sent with a summary text covering
// the first covered messages of hist.
func summarizedBytes(hist []agentfleet.Message, covered int, text string) int {
	n := messagesBytes(hist[covered:])
	if covered > 0 {
		n += messageOverhead + len(SummaryLead) + len(text)
	}
	return n
}

func messagesBytes(ms []agentfleet.Message) int {
	n := 0
	for _, m := range ms {
		n += MessageBytes(m)
	}
	return n
}

// fixedBytes measures what every request of st sends besides its
// messages: the system prompt and the tool definitions.
func fixedBytes(st *State) int {
	n := len(st.SystemPrompt) + messageOverhead
	if st.Tools != nil {
		for _, d := range st.Tools.Defs() {
			n += len(d.Name) + len(d.Description) + len(d.InputSchema) + messageOverhead
		}
	}
	return n
}
