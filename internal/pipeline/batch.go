package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"go.opentelemetry.io/otel/trace"
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

	// The slices of a batch of one call.
	one        [1]*Outcome
	oneMessage [1]*agentfleet.ToolResultMessage
}

// Run executes a batch of calls (spec executeToolCalls). It chooses parallel
// mode only when the configuration asks for it and every known tool of the
// batch is parallel-safe. Each call gets exactly one result, in call order;
// after an abort, the calls not yet started get a "skipped" result.
func (p *Pipeline) Run(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, calls []agentfleet.ToolCall) *Batch {
	b := &Batch{Parallel: p.parallel(pctx, calls)}
	if len(calls) == 1 { // most batches: one allocation less for each slice
		b.Outcomes, b.Messages = b.one[:], b.oneMessage[:]
	} else {
		b.Outcomes, b.Messages = make([]*Outcome, len(calls)), make([]*agentfleet.ToolResultMessage, len(calls))
	}
	if b.Parallel {
		p.runParallel(ctx, pctx, assistant, calls, b.Outcomes)
	} else {
		p.runSequential(ctx, pctx, assistant, calls, b.Outcomes)
	}
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

func (p *Pipeline) runSequential(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, calls []agentfleet.ToolCall, outs []*Outcome) {
	for i, call := range calls {
		at := time.Now()
		cctx, span := p.traceCall(ctx, call)
		// With a before-tool-call hook, which may take its time (or ask a
		// person), the call has started for whoever watches.
		early := p.cfg.Before != nil
		if early {
			p.emitStart(call)
		}
		if ctx.Err() != nil {
			outs[i] = p.end(at, !early, span, errorOutcome(call, Skipped, SkippedText))
			continue
		}
		prep, out := p.Prepare(cctx, pctx, assistant, call)
		if out != nil {
			outs[i] = p.end(at, !early, span, out)
			continue
		}
		prep.start.p, prep.start.out = p, early
		out = p.Finalize(cctx, pctx, assistant, prep, p.Execute(cctx, prep))
		outs[i] = p.end(at, false, span, out)
	}
}

// runParallel prepares the calls one by one, then runs the before hook of
// each and executes the prepared ones concurrently (at most MaxParallel at once) and finalizes each as it
// completes; results keep the call order. The batch's tool.start events
// come first, in call order. A batch of one call runs as a sequential one
// does, without a goroutine.
func (p *Pipeline) runParallel(ctx context.Context, pctx *Context, assistant *agentfleet.AssistantMessage, calls []agentfleet.ToolCall, outs []*Outcome) {
	if len(calls) == 1 {
		p.runSequential(ctx, pctx, assistant, calls, outs)
		return
	}
	sem := make(chan struct{}, p.cfg.MaxParallel)
	var wg sync.WaitGroup
	for i, call := range calls {
		at := time.Now()
		cctx, span := p.traceCall(ctx, call)
		p.emitStart(call)
		if ctx.Err() != nil {
			outs[i] = p.end(at, false, span, errorOutcome(call, Skipped, SkippedText))
			continue
		}
		prep, out := p.prepare(cctx, pctx, call)
		if out != nil {
			outs[i] = p.end(at, false, span, out)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The before hook may wait for a person: each call waits on
			// its own, and holds no slot meanwhile.
			if out := p.before(cctx, pctx, assistant, prep); out != nil {
				outs[i] = p.end(at, false, span, out)
				return
			}
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				outs[i] = p.end(at, false, span, errorOutcome(call, Aborted, AbortedText))
				return
			}
			outs[i] = p.end(at, false, span, p.Finalize(cctx, pctx, assistant, prep, p.Execute(cctx, prep)))
		}()
	}
	wg.Wait()
}

// end publishes the call's tool.end, after its tool.start if start says
// that is not out yet, and ends its span.
func (p *Pipeline) end(at time.Time, start bool, span trace.Span, out *Outcome) *Outcome {
	if start {
		p.emitStart(out.Call)
	}
	out.Duration = time.Since(at)
	if p.cfg.OnOutcome != nil {
		p.cfg.OnOutcome(out)
	}
	p.emit(&agentfleet.Event{
		Type: agentfleet.EventToolEnd, ToolCallID: out.Call.ID, ToolName: out.Call.Name,
		Result: out.Result, IsError: out.IsError,
		DurationMS: float64(out.Duration.Microseconds()) / 1000,
		Worker:     out.Result.Worker, Attempt: out.Result.Attempts, Outcome: string(out.Kind),
	})
	p.endCall(span, out)
	return out
}
