package window

import (
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// StrategySummarize is the strategy of a Policy that has the model
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

// SummaryInput is what PlanSummary works on.
type SummaryInput struct {
	// Messages is the history as the turn begins, oldest first.
	Messages []agentfleet.Message
	// RunStart is the index of the current run's first message.
	RunStart int
	// FixedBytes measures what the request sends besides its messages
	// (FixedBytes).
	FixedBytes int
	// Summary is the session's last summary; nil when none.
	Summary *agentfleet.ContextSummary
	// Tokens estimates; nil means a fresh Estimator.
	Tokens *Estimator
}

// SummaryPlan is what the summarize strategy does for one request.
type SummaryPlan struct {
	// Covered and Text are the summary the request may send: it stands for
	// Messages[:Covered]. Covered is 0 when there is none, or when the
	// session's summary covers part of the current run.
	Covered int
	Text    string
	// Cut, when above Covered, asks for a new summary of Messages[:Cut],
	// following Text: the rest passes three quarters of the budget. The
	// new summary covers every turn before the current run except the
	// most recent ones that fit in half the budget.
	Cut int
}

// Write reports whether the plan asks for a new summary.
func (p SummaryPlan) Write() bool { return p.Cut > p.Covered }

// PlanSummary decides whether the request of a turn needs a new summary,
// and which summary it may send. It is a pure function.
func (p Policy) PlanSummary(in SummaryInput) SummaryPlan {
	est := in.Tokens
	if est == nil {
		est = new(Estimator)
	}
	hist, runStart := in.Messages, in.RunStart
	budget := p.Budget(est.Tokens(in.FixedBytes))
	var plan SummaryPlan
	if sum := in.Summary; sum != nil && sum.Covers <= runStart {
		plan.Covered, plan.Text = sum.Covers, sum.Text
	}
	if est.Tokens(SummarizedBytes(hist, plan.Covered, plan.Text)) <= budget*3/4 {
		return plan
	}
	cut, tail := runStart, MessagesBytes(hist[runStart:])
	for i := runStart - 1; i > plan.Covered; i-- {
		tail += MessageBytes(hist[i])
		if est.Tokens(tail) > budget/2 {
			break
		}
		if _, ok := hist[i].(*agentfleet.UserMessage); ok {
			cut = i
		}
	}
	if cut > plan.Covered {
		plan.Cut = cut
	}
	return plan
}

// Summarized returns the messages to send with a summary text standing for
// the first covered messages of hist, and the index of the current run's
// first message among them; hist and runStart as they are when there is
// no text. A text that covers 0 messages stands for messages no longer in
// hist (a history cut by its bounds, package retention): it is sent
// before them all.
func Summarized(hist []agentfleet.Message, runStart, covered int, text string) ([]agentfleet.Message, int) {
	if covered <= 0 && text == "" {
		return hist, runStart
	}
	msgs := make([]agentfleet.Message, 0, len(hist)-covered+1)
	msgs = append(msgs, agentfleet.NewUserMessage(SummaryLead+text))
	return append(msgs, hist[covered:]...), runStart - covered + 1
}

// SummarizedBytes measures the messages sent with a summary text covering
// the first covered messages of hist.
func SummarizedBytes(hist []agentfleet.Message, covered int, text string) int {
	n := MessagesBytes(hist[covered:])
	if covered > 0 || text != "" {
		n += messageOverhead + len(SummaryLead) + len(text)
	}
	return n
}

// Transcript is the text the summarizer is asked to summarize: the
// earlier summary prev, if any, then msgs, one line each, cut where it
// would no longer leave, in the window, room for the prompt and the
// summary. It is a pure function.
func (p Policy) Transcript(prev string, msgs []agentfleet.Message, est *Estimator) string {
	if est == nil {
		est = new(Estimator)
	}
	var b strings.Builder
	if prev != "" {
		b.WriteString("Earlier summary:\n" + prev + "\n\nThe conversation since:\n")
	}
	// The transcript fills what the window has besides the prompt and the
	// reserve for the summary.
	limit := est.Bytes(p.Budget(est.Tokens(len(SummaryPrompt)+2*messageOverhead+len(prev)))) - len(prev)
	for _, m := range msgs {
		if b.Len() > limit {
			b.WriteString("[… the rest of the transcript left out]\n")
			break
		}
		writeTranscript(&b, m)
	}
	return b.String()
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
