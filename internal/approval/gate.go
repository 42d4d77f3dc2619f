package approval

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Gate. Every field is optional.
type Config struct {
	Policy Policy
	// StoreRequest stores that a call of run runID waits; StoreDecision
	// stores the decision on it, before the call runs or gets its error
	// result. Each returns once the record is stored; an error means it
	// never will be. Nil stores nothing (a session kept in memory).
	StoreRequest  func(ctx context.Context, runID string, r *agentfleet.ApprovalRequest) error
	StoreDecision func(ctx context.Context, runID string, d *agentfleet.ApprovalDecision) error
	// Validate checks the arguments of an edit against the tool's schema.
	// Nil accepts any.
	Validate func(tool string, args map[string]any) error
}

// Answer tells whoever sent a decision what became of it, once that is
// known: r.OK once the decision is stored and acts. final says the
// decision's delivery may be settled (false: it could not be stored here,
// and the session's next owner should see it again).
type Answer func(r *agentfleet.ApprovalReply, final bool)

// Gate is the calls of one session that wait for approval, and their
// decisions. It is safe for concurrent use; Decide never blocks.
type Gate struct {
	cfg Config

	mu    sync.Mutex
	calls map[string]*call // by tool call id
}

// call is one call that waits, or waited, for a decision.
type call struct {
	runID string
	req   *agentfleet.ApprovalRequest
	// decision is the first decision taken, nil while the call waits;
	// decided is closed when it is set.
	decision *agentfleet.ApprovalDecision
	decided  chan struct{}
	// stored: the decision is in the history (it acts).
	stored bool
	// answers wait for the winning decision to be stored.
	answers []Answer
	// gone says why the call takes no decision any more ("" while it may).
	gone string
	// used: a hook of this process waited for the call; a later call with
	// the same id (models may repeat ids across runs) is another call.
	used bool
}

// New returns a gate that waits for nothing yet.
func New(cfg Config) *Gate {
	return &Gate{cfg: cfg, calls: map[string]*call{}}
}

// Policy returns the gate's policy.
func (g *Gate) Policy() Policy { return g.cfg.Policy }

// Restore takes up the requests and decisions of a session's stored
// history, for the runs that did not end: their calls wait again (with
// their stored deadline) or act on their stored decision when their run
// resumes, and decisions that arrive meanwhile are taken.
func (g *Gate) Restore(runID string, req *agentfleet.ApprovalRequest, d *agentfleet.ApprovalDecision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.calls[reqID(req, d)]
	if c == nil {
		c = &call{runID: runID, decided: make(chan struct{})}
		g.calls[reqID(req, d)] = c
	}
	if req != nil {
		c.req = req
	}
	if d != nil && c.decision == nil {
		c.decision, c.stored = d, true
		close(c.decided)
	}
}

func reqID(req *agentfleet.ApprovalRequest, d *agentfleet.ApprovalDecision) string {
	if req != nil {
		return req.ToolCallID
	}
	return d.ToolCallID
}

// Unexecuted reports whether the stored history shows that call id never
// ran: it waits for a decision, or was refused. A resumed run puts such a
// call through the pipeline again instead of calling its outcome unknown.
func (g *Gate) Unexecuted(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.calls[id]
	return c != nil && c.req != nil && (c.decision == nil || !c.decision.Approve)
}

// Pending returns the requests that wait for a decision now.
func (g *Gate) Pending() []agentfleet.ApprovalRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []agentfleet.ApprovalRequest
	for _, c := range g.calls {
		if c.req != nil && c.decision == nil && c.gone == "" {
			out = append(out, *c.req)
		}
	}
	return out
}

// Decide takes a person's decision on a waiting call. The first decision
// on a call wins; answer hears, once the winner is stored, that it acts,
// and a later one hears at once which decision won (a later one that
// chooses alike, or has the winner's id, hears that it acts). A decision on a call
// that does not wait, or whose edit does not match the tool's schema, is
// answered with an error; after a bad edit the call still waits.
func (g *Gate) Decide(d *agentfleet.ApprovalDecision, answer Answer) {
	g.mu.Lock()
	c := g.calls[d.ToolCallID]
	switch {
	case c == nil || c.req == nil:
		g.mu.Unlock()
		answer(&agentfleet.ApprovalReply{ToolCallID: d.ToolCallID,
			Error: fmt.Sprintf("no tool call %q waits for approval in this session", d.ToolCallID)}, true)
		return
	case c.decision != nil && (c.decision.ID == d.ID && d.ID != "" || sameChoice(c.decision, d)):
		// The same decision delivered again, or the same choice made
		// again (a decision sent as a request reaches the owner twice:
		// relayed with its reply, and from the approve stream without):
		// answered as the first was.
		if c.stored {
			g.mu.Unlock()
			answer(reply(c.decision), true)
			return
		}
		c.answers = append(c.answers, answer)
		g.mu.Unlock()
		return
	case c.decision != nil:
		w := c.decision
		g.mu.Unlock()
		answer(&agentfleet.ApprovalReply{ToolCallID: d.ToolCallID, Decision: w.Outcome(), DecisionID: w.ID,
			Error: fmt.Sprintf("tool call %s was already decided: %s by decision %s at %s", d.ToolCallID, w.Outcome(), w.ID, w.Decided.Format(time.RFC3339Nano))}, true)
		return
	case c.gone != "":
		why := c.gone
		g.mu.Unlock()
		answer(&agentfleet.ApprovalReply{ToolCallID: d.ToolCallID, Error: fmt.Sprintf("tool call %s no longer waits for approval: %s", d.ToolCallID, why)}, true)
		return
	}
	if d.Approve && d.Arguments != nil && g.cfg.Validate != nil {
		if err := g.cfg.Validate(c.req.ToolName, d.Arguments); err != nil {
			g.mu.Unlock()
			answer(&agentfleet.ApprovalReply{ToolCallID: d.ToolCallID,
				Error: fmt.Sprintf("edited arguments of tool call %s do not fit tool %s: %v; the call still waits for a decision", d.ToolCallID, c.req.ToolName, err)}, true)
			return
		}
	}
	if d.Decided.IsZero() {
		d.Decided = time.Now().UTC()
	}
	c.decision = d
	c.answers = append(c.answers, answer)
	close(c.decided)
	g.mu.Unlock()
}

// sameChoice reports whether two decisions choose alike: the same outcome,
// reason and edit.
func sameChoice(a, b *agentfleet.ApprovalDecision) bool {
	return a.Approve == b.Approve && a.Reason == b.Reason && reflect.DeepEqual(a.Arguments, b.Arguments)
}

func reply(d *agentfleet.ApprovalDecision) *agentfleet.ApprovalReply {
	return &agentfleet.ApprovalReply{OK: true, ToolCallID: d.ToolCallID, Decision: d.Outcome(), DecisionID: d.ID}
}

// NotApprovedText is the result of a call whose deadline passed.
const NotApprovedText = "Tool %s: not approved in time: no decision within %v"

// Hook is the before-tool-call hook that holds the calls the policy names
// until they are decided: an approval proceeds (with its edit), a
// rejection blocks the call with the reason, and the deadline blocks it as
// not approved in time. The call's tool.approval events go out on in.Sink:
// one as it starts to wait, one with the decision.
func (g *Gate) Hook(ctx context.Context, in *pipeline.BeforeContext) (_ *pipeline.BeforeResult, err error) {
	if !g.cfg.Policy.Needs(in.Tool) {
		return nil, nil
	}
	if tracing.Recording(ctx) {
		var span trace.Span
		ctx, span = tracing.Child(ctx, "approval "+in.Call.Name, trace.WithAttributes(
			tracing.GenAIToolName.String(in.Call.Name), tracing.GenAIToolCallID.String(in.Call.ID)))
		defer func() { endApprovalSpan(span, err) }()
	}
	c, fresh := g.register(in)
	if fresh && g.cfg.StoreRequest != nil {
		if err := g.cfg.StoreRequest(ctx, in.RunID, c.req); err != nil {
			g.leave(c, "its request could not be stored")
			return nil, fmt.Errorf("Tool %s: the approval request could not be stored: %w", in.Call.Name, err)
		}
	}
	req := c.req
	deadline := req.Deadline
	ann := req.Annotations
	select {
	case <-c.decided: // decided while its run was not running: no wait
	default:
		in.Sink.Emit(&agentfleet.Event{Type: agentfleet.EventToolApproval, ToolCallID: req.ToolCallID, ToolName: req.ToolName,
			Arguments: req.Arguments, Annotations: &ann, Deadline: &deadline, Decision: agentfleet.ApprovalPending})
	}

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-c.decided:
	case <-ctx.Done():
		g.leave(c, "its run was aborted")
		return nil, ctx.Err()
	case <-timer.C:
		g.timeOut(c)
	}
	d, answers, err := g.settle(ctx, c)
	if err == nil {
		trace.SpanFromContext(ctx).SetAttributes(tracing.Decision.String(d.Outcome()), tracing.DecisionID.String(d.ID))
	}
	for _, a := range answers {
		if err != nil {
			a(&agentfleet.ApprovalReply{ToolCallID: d.ToolCallID, Error: fmt.Sprintf("decision on tool call %s could not be stored: %v", d.ToolCallID, err)}, false)
		} else {
			a(reply(d), true)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("Tool %s: the approval decision could not be stored: %w", in.Call.Name, err)
	}
	in.Sink.Emit(&agentfleet.Event{Type: agentfleet.EventToolApproval, ToolCallID: req.ToolCallID, ToolName: req.ToolName,
		Decision: d.Outcome(), DecisionID: d.ID, Reason: d.Reason,
		DurationMS: float64(d.Decided.Sub(req.Requested).Microseconds()) / 1000})
	switch {
	case d.TimedOut:
		return &pipeline.BeforeResult{Block: true, Reason: fmt.Sprintf(NotApprovedText, in.Call.Name, g.cfg.Policy.timeout())}, nil
	case !d.Approve:
		reason := fmt.Sprintf("Tool %s: the call was rejected", in.Call.Name)
		if d.Reason != "" {
			reason += ": " + d.Reason
		}
		return &pipeline.BeforeResult{Block: true, Reason: reason}, nil
	}
	return &pipeline.BeforeResult{Args: d.Arguments}, nil
}

// register returns the call's entry: the one restored from the history
// (fresh false), or a new one with its deadline.
func (g *Gate) register(in *pipeline.BeforeContext) (c *call, fresh bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c = g.calls[in.Call.ID]
	if c != nil && c.req != nil && c.gone == "" && !c.used && c.runID == in.RunID {
		c.used = true
		return c, false // restored from the history: it waits again
	}
	now := time.Now().UTC()
	c = &call{runID: in.RunID, decided: make(chan struct{}), used: true, req: &agentfleet.ApprovalRequest{
		ToolCallID: in.Call.ID, ToolName: in.Call.Name, Arguments: in.Args, Annotations: in.Tool.Annotations,
		Requested: now, Deadline: now.Add(g.cfg.Policy.timeout()),
	}}
	g.calls[in.Call.ID] = c
	return c, true
}

// leave marks a call that takes no decision any more. A decision that won
// but is not stored is not settled (final false): delivered again, it
// hears why the call no longer waits, or, if the run was suspended rather
// than aborted, is taken by the session's next owner.
func (g *Gate) leave(c *call, why string) {
	g.mu.Lock()
	c.gone = why
	answers := c.answers
	c.answers = nil
	g.mu.Unlock()
	for _, a := range answers {
		a(&agentfleet.ApprovalReply{ToolCallID: c.req.ToolCallID, Error: fmt.Sprintf("tool call %s no longer waits for approval: %s", c.req.ToolCallID, why)}, false)
	}
}

// timeOut decides the call as timed out, unless a decision won first.
func (g *Gate) timeOut(c *call) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.decision != nil {
		return
	}
	c.decision = &agentfleet.ApprovalDecision{ToolCallID: c.req.ToolCallID, ID: "deadline", TimedOut: true, Decided: time.Now().UTC(),
		Reason: fmt.Sprintf("no decision within %v", g.cfg.Policy.timeout())}
	close(c.decided)
}

// settle stores the winning decision, unless it is stored already, and
// returns it with the answers that waited for it.
func (g *Gate) settle(ctx context.Context, c *call) (*agentfleet.ApprovalDecision, []Answer, error) {
	g.mu.Lock()
	d, stored := c.decision, c.stored
	g.mu.Unlock()
	var err error
	if !stored && g.cfg.StoreDecision != nil {
		err = g.cfg.StoreDecision(ctx, c.runID, d)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		c.stored = true
	}
	answers := c.answers
	c.answers = nil
	return d, answers, err
}

// endApprovalSpan ends the span of an approval wait: an error when the
// decision could not be had or stored, or the run ended the wait.
func endApprovalSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
