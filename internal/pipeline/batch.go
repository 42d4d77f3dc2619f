package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
)

// SkippedText is the text of the result of a call that never ran because the
// run was aborted before its turn.
const SkippedText = "Tool call skipped: the run was aborted"

// Batch is the result of one batch of tool calls (spec agentToolCallBatch):
// one message per call, in the order of the calls.
type Batch struct {
	Outcomes []*Outcome
	Messages []*agentfleet.ToolResultMessage
	// Terminate holds when every result of the batch asked to terminate the
	// run (spec shouldTerminate).
	Terminate bool
	// Parallel says the batch ran in parallel mode.
	Parallel bool
}

// Run executes a batch of calls (spec executeToolCalls). It chooses parallel
// mode only when the configuration asks for it and every known tool of the
// batch is parallel-safe. Each call gets exactly one result, in call order;
// after an abort, the calls not yet started get a "skipped" result.
func (p *Pipeline) Run(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, calls []agentfleet.ToolCall) *Batch {
	b := &Batch{Parallel: p.parallel(pctx, calls)}
	if b.Parallel {
		b.Outcomes = p.runParallel(ctx, pctx, assistant, calls)
	} else {
		b.Outcomes = p.runSequential(ctx, pctx, assistant, calls)
	}
	b.Messages = make([]*agentfleet.ToolResultMessage, len(b.Outcomes))
	b.Terminate = len(b.Outcomes) > 0
	for i, o := range b.Outcomes {
		b.Messages[i] = o.Message()
		if !o.Result.Terminate {
			b.Terminate = false
		}
	}
	return b
}

func (p *Pipeline) parallel(pctx *Context, calls []agentfleet.ToolCall) bool {
	if p.cfg.Mode != Parallel {
		return false
	}
	if pctx == nil || pctx.Tools == nil {
		return true
	}
	for _, c := range calls {
		if t, ok := pctx.Tools.Get(c.Name); ok && !t.Parallel {
			return false
		}
	}
	return true
}

func (p *Pipeline) runSequential(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, calls []agentfleet.ToolCall) []*Outcome {
	outs := make([]*Outcome, len(calls))
	for i, call := range calls {
		st := p.start(call)
		if p.cfg.Before != nil {
			// The hook may take its time (or ask a person): the call has
			// started for whoever watches.
			st.announce()
		}
		if ctx.Err() != nil {
			outs[i] = p.end(st, errorOutcome(call, Skipped, SkippedText))
			continue
		}
		prep, out := p.Prepare(ctx, pctx, assistant, call)
		if out == nil {
			prep.Sent = st.announce
			out = p.Finalize(ctx, pctx, assistant, prep, p.Execute(ctx, prep))
		}
		outs[i] = p.end(st, out)
	}
	return outs
}

// runParallel prepares the calls one by one, then executes the prepared ones
// concurrently (at most MaxParallel at once) and finalizes each as it
// completes; results keep the call order. The batch's tool.start events
// come first, in call order. A batch of one call runs as a sequential one
// does, without a goroutine.
func (p *Pipeline) runParallel(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, calls []agentfleet.ToolCall) []*Outcome {
	if len(calls) == 1 {
		return p.runSequential(ctx, pctx, assistant, calls)
	}
	outs := make([]*Outcome, len(calls))
	sem := make(chan struct{}, p.cfg.MaxParallel)
	var wg sync.WaitGroup
	for i, call := range calls {
		st := p.start(call)
		st.announce()
		if ctx.Err() != nil {
			outs[i] = p.end(st, errorOutcome(call, Skipped, SkippedText))
			continue
		}
		prep, out := p.Prepare(ctx, pctx, assistant, call)
		if out != nil {
			outs[i] = p.end(st, out)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				outs[i] = p.end(st, errorOutcome(call, Aborted, AbortedText))
				return
			}
			outs[i] = p.end(st, p.Finalize(ctx, pctx, assistant, prep, p.Execute(ctx, prep)))
		}()
	}
	wg.Wait()
	return outs
}

// started is a call that has started: when, and its tool.start event,
// published once, by announce, as soon as the call's request is on its
// way, and at the latest before any other event of the call.
type started struct {
	p    *Pipeline
	call agentfleet.ToolCall
	at   time.Time
	once sync.Once
}

func (p *Pipeline) start(call agentfleet.ToolCall) *started {
	return &started{p: p, call: call, at: time.Now()}
}

// announce publishes the call's tool.start, the first time only; a second
// caller returns once the event is out.
func (s *started) announce() { s.once.Do(s.emit) }

func (s *started) emit() {
	s.p.emit(&agentfleet.Event{
		Type: agentfleet.EventToolStart, ToolCallID: s.call.ID, ToolName: s.call.Name, Arguments: s.call.Arguments,
	})
}

func (p *Pipeline) end(st *started, out *Outcome) *Outcome {
	st.announce()
	out.Duration = time.Since(st.at)
	if p.cfg.OnOutcome != nil {
		p.cfg.OnOutcome(out)
	}
	p.emit(&agentfleet.Event{
		Type: agentfleet.EventToolEnd, ToolCallID: out.Call.ID, ToolName: out.Call.Name,
		Result: out.Result, IsError: out.IsError,
		DurationMS: float64(out.Duration.Microseconds()) / 1000,
		Worker:     out.Result.Worker, Attempt: out.Result.Attempts, Outcome: string(out.Kind),
	})
	return out
}
