package input

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
)

// Inbound is one accepted message from a client subject.
type Inbound struct {
	Kind    string // KindIn, KindAsk, KindSteer or KindAbort
	Agent   string
	Session string
	Subject string
	// Message is the user message of in, ask and steer.
	Message *agentfleet.UserMessage
	// Reason is the reason of an abort.
	Reason string
	// Decision is the decision of an approve message.
	Decision *agentfleet.ApprovalDecision

	// Delivery is the JetStream delivery count of durable input (1 for the
	// first delivery); 0 for core NATS input.
	Delivery uint64
	// Seq is the stream sequence of durable input; 0 for core NATS input.
	Seq uint64
	// First says the stream stored this input on the condition that no
	// other input of its session was in it (firstinput.go): there is no
	// stored input of the session before Seq.
	First bool
	// Trace is the W3C trace context the message was sent with (its
	// traceparent and tracestate headers), if any: the run that takes the
	// message is traced under it.
	Trace trace.SpanContext

	replyTo string // where reply and reject answer
	reply   func(*agentfleet.AssistantMessage)
	// decisionReply answers an approve message (ReplyDecision).
	decisionReply func(*agentfleet.ApprovalReply)
	// dl settles durable input (nil for core NATS input, which retry and
	// rejectFn answer).
	dl       *delivery
	retry    func(err error)
	rejectFn func(err error)
}

// Retry reports a failure that can pass (the session could not be loaded):
// durable input is delivered again after a backoff, and dropped with an
// error event once it failed DurableConfig.MaxDeliver times; an ask gets an
// error reply saying to try again.
func (in *Inbound) Retry(err error) {
	if in.dl != nil {
		in.dl.retry(in, err)
		return
	}
	if in.retry != nil {
		in.retry(err)
	}
}

// Reject reports input that can never be handled: an error event names it,
// an ask gets an error reply, and durable input is terminated.
func (in *Inbound) Reject(err error) {
	if in.dl != nil {
		in.dl.reject(in, err)
		return
	}
	if in.rejectFn != nil {
		in.rejectFn(err)
	}
}

// Durable reports whether the input came from the durable input stream, so
// that Ack or Nak must be called once it is safely handled.
func (in *Inbound) Durable() bool { return in.dl != nil }

// Ack acknowledges durable input (its run ended and the history holding it
// is stored) under f, the ownership fence of the message's session. The
// acknowledgement is refused unless f is of the message's partition and
// still holds (DurableInput.Fenced): the error says why, and the message
// is left to be delivered again, to whoever owns its partition then. It is
// a no-op for core NATS input.
func (in *Inbound) Ack(f ownership.Fence) error {
	if in.dl != nil {
		return in.dl.d.ack(in.dl.seq, in.dl.m, f)
	}
	return nil
}

// Nak asks for durable input to be delivered again at once (a handover;
// not a failure). It is a no-op for core NATS input.
func (in *Inbound) Nak() {
	if in.dl != nil {
		in.dl.d.settle(in.dl.seq, in.dl.m, false)
	}
}

// Reply answers an ask with the final message of the run that took it, or
// an abort sent as a request with the outcome. It is a no-op for other kinds
// and for messages without a reply subject.
func (in *Inbound) Reply(m *agentfleet.AssistantMessage) {
	if in.reply != nil {
		in.reply(m)
	}
}

// HasReply reports whether Reply (or, for a decision, ReplyDecision)
// answers anyone.
func (in *Inbound) HasReply() bool { return in.reply != nil || in.decisionReply != nil }

// InputHandler takes accepted input. HandleInput is called from the
// subscription and must not block; an error rejects the input with an error
// event (and an error reply to an ask), or, when it wraps bus.ErrTemporary, has
// it tried again (Inbound.Retry). A handler that finds out later may call
// Retry or Reject itself.
type InputHandler interface {
	HandleInput(in *Inbound) error
}

// InputHandlerFunc adapts a function to InputHandler.
type InputHandlerFunc func(in *Inbound) error

// HandleInput implements InputHandler.
func (f InputHandlerFunc) HandleInput(in *Inbound) error { return f(in) }

// Input subscribes the client subjects of an orchestrator.
type Input struct {
	nc       *nats.Conn
	subjects bus.Subjects
	handler  InputHandler
	pub      *events.Publisher
	log      *slog.Logger
	subs     []*nats.Subscription
	// Kinds are the input kinds subscribed; default all four. With durable
	// input, in and steer come from the stream instead.
	Kinds []string
	// OnInput, if set, is called with the outcome of input that the
	// handler does not take: "rejected", or "retried" (durable input to be
	// delivered again after a failure that can pass). The handler reports
	// "accepted" and "duplicate" itself, once it knows.
	OnInput func(outcome string)
	// Queue, if set, is the queue group of the subscriptions.
	Queue string
	// Check, if set, vets a relayed message before it is stored (an
	// unknown agent is refused at once, not by the owner later).
	Check func(*Inbound) error
	// Replies decides which reply subjects are answered; input whose reply
	// it refuses is rejected, unanswered. Optional; the zero value answers
	// inbox space (DefaultReplyInboxes).
	Replies bus.ReplyGuard

	js     jetstream.JetStream // set by Relayed
	relays relayAcks           // the stores of relayed messages not yet acknowledged
}

// QueueInput is the queue group of the input subscriptions, so that several
// orchestrators share the input. (Sessions must then be pinned by the
// caller; see docs/DESIGN.md.)
const QueueInput = "agentfleet-orchestrator"

// NewInput returns an input that is not yet subscribed.
func NewInput(nc *nats.Conn, subjects bus.Subjects, h InputHandler, pub *events.Publisher, log *slog.Logger) *Input {
	if log == nil {
		log = slog.Default()
	}
	in := &Input{nc: nc, subjects: subjects, handler: h, pub: pub, log: log}
	in.relays.in = in
	return in
}

// Start subscribes in, ask, steer, abort and approve.
func (in *Input) Start() error {
	kinds := in.Kinds
	if len(kinds) == 0 {
		kinds = []string{bus.KindIn, bus.KindAsk, bus.KindSteer, bus.KindAbort, bus.KindApprove}
	}
	for _, kind := range kinds {
		sub, err := in.nc.QueueSubscribe(in.subjects.ClientWildcard(kind), in.Queue, in.receive)
		if err != nil {
			return errors.Join(fmt.Errorf("input: subscribe %s: %w", kind, err), in.Stop())
		}
		in.subs = append(in.subs, sub)
	}
	// Make sure the server has the subscriptions before callers send.
	if err := in.nc.Flush(); err != nil {
		return errors.Join(fmt.Errorf("input: %w", err), in.Stop())
	}
	return nil
}

// Stop unsubscribes; messages already received are still handled.
func (in *Input) Stop() error {
	var errs []error
	for _, s := range in.subs {
		errs = append(errs, s.Unsubscribe())
	}
	in.subs = nil
	return errors.Join(errs...)
}

func (in *Input) receive(m *nats.Msg) {
	// With JetStream the approve stream keeps every decision, and the
	// input stream takes it from there to the session's owner
	// (SetupApproveStream).
	kept := in.js != nil && strings.HasPrefix(m.Subject, in.subjects.Prefix+"."+bus.KindApprove+".")
	if kept && m.Reply == "" {
		return // relayed too, it would reach the owner twice
	}
	refuse := func(msg *Inbound, err error) {
		if kept && msg.replyTo != "" && len(m.Data) <= MaxDecisionBytes {
			// Its publisher hears why at once; the error event comes
			// once, from the owner's refusal of the kept copy. (One too
			// large may not have been kept.)
			in.answerRejected(m, msg, err)
			return
		}
		if kept && errors.Is(err, bus.ErrReplyRefused) {
			// Only the reply is refused: the kept copy still goes to
			// the session's owner, which answers nobody.
			err = fmt.Errorf("%w; the decision itself goes to the session's owner through the approve stream, unanswered", err)
		}
		in.reject(m, msg, err)
	}
	msg, err := in.parse(m)
	if err != nil {
		refuse(msg, err)
		return
	}
	if in.js != nil {
		if in.Check != nil {
			if err := in.Check(msg); err != nil {
				refuse(msg, err)
				return
			}
		}
		in.relay(m, msg)
		return
	}
	msg.rejectFn = func(err error) { in.reject(m, msg, err) }
	msg.retry = func(err error) {
		in.reject(m, msg, fmt.Errorf("%w; try again", err))
	}
	if err := in.handler.HandleInput(msg); err != nil {
		if errors.Is(err, bus.ErrTemporary) {
			msg.Retry(err)
		} else {
			msg.Reject(err)
		}
	}
}

func (in *Input) parse(m *nats.Msg) (*Inbound, error) {
	kind, agent, session, err := in.subjects.ParseClient(m.Subject)
	msgID := ""
	if m.Header != nil {
		msgID = m.Header.Get(nats.MsgIdHdr)
	}
	reply := m.Reply
	if reply != "" {
		if rerr := in.Replies.Check(reply); rerr != nil {
			// Nothing is published on it, not even the refusal: the
			// error event says what was refused.
			reply = ""
			if err == nil {
				err = rerr
			}
		}
	}
	return in.build(m, kind, agent, session, reply, msgID, err)
}

// parseStored parses a message of the input stream: in and steer as
// published, and relayed asks and aborts with their kind, reply subject and
// id from the relay headers.
func (in *Input) parseStored(m *nats.Msg) (*Inbound, error) {
	kind, agent, session, err := in.subjects.ParseStored(m.Subject)
	msgID, reply := "", ""
	if m.Header != nil {
		msgID = m.Header.Get(HeaderMsgID) // moved or relayed
		if msgID == "" {
			msgID = m.Header.Get(nats.MsgIdHdr)
		}
	}
	if err == nil && kind == bus.KindRelay {
		kind = m.Header.Get(HeaderKind)
		msgID, reply = m.Header.Get(HeaderMsgID), m.Header.Get(HeaderReply)
		switch {
		case kind != bus.KindAsk && kind != bus.KindAbort && kind != bus.KindApprove:
			err = fmt.Errorf("relayed input of subject %q: header %s is %q, want %s, %s or %s", m.Subject, HeaderKind, kind, bus.KindAsk, bus.KindAbort, bus.KindApprove)
		case reply != "":
			if rerr := in.Replies.Check(reply); rerr != nil {
				err = fmt.Errorf("relayed input of subject %q: header %s: %w", m.Subject, HeaderReply, rerr)
				reply = ""
			}
		}
	}
	msg, err := in.build(m, kind, agent, session, reply, msgID, err)
	if kind != "" && agent != "" {
		// Errors name the subject the client used, not the stored one.
		msg.Subject = in.subjects.Client(kind, agent, session)
	}
	return msg, err
}

func (in *Input) build(m *nats.Msg, kind, agent, session, reply, msgID string, err error) (*Inbound, error) {
	msg := &Inbound{Kind: kind, Agent: agent, Session: session, Subject: m.Subject, replyTo: reply, Trace: tracing.Remote(m.Header)}
	if err != nil {
		return msg, err
	}
	// An abort sent as a request is answered too: an assistant message
	// with stop reason aborted when a run was aborted (the reject path
	// answers one with stop reason error when none was).
	if (kind == bus.KindAsk || kind == bus.KindAbort) && reply != "" {
		msg.reply = func(a *agentfleet.AssistantMessage) {
			b, err := agentfleet.AppendMessageJSON(nil, a)
			if err != nil {
				in.log.Error("encode ask reply", "session", session, "err", err)
				return
			}
			if err := in.nc.Publish(reply, b); err != nil {
				in.log.Warn("ask reply", "session", session, "err", err)
			}
		}
	}
	if kind == bus.KindApprove && reply != "" {
		msg.decisionReply = func(r *agentfleet.ApprovalReply) {
			b, err := json.Marshal(r)
			if err != nil {
				in.log.Error("encode approve reply", "session", session, "err", err)
				return
			}
			if err := in.nc.Publish(reply, b); err != nil {
				in.log.Warn("approve reply", "session", session, "err", err)
			}
		}
	}
	switch kind {
	case bus.KindAbort:
		msg.Reason, err = wire.ParseAbort(m.Data)
	case bus.KindApprove:
		msg.Decision, err = ParseDecision(m.Data, msgID)
	default:
		msg.Message, err = wire.ParseUserMessage(m.Data, msgID)
	}
	if err == nil {
		err = parent(m, msg)
	}
	return msg, err
}

// parent reads the parent headers of an ask sent by another agent's ask
// tool onto its message (package delegate); on other kinds they are
// refused.
func parent(m *nats.Msg, msg *Inbound) error {
	p, err := delegate.Parse(m.Header.Get)
	switch {
	case err != nil:
		return err
	case p != nil && msg.Kind != bus.KindAsk:
		return fmt.Errorf("header %s is for asks only, not for %s", delegate.HeaderAgent, msg.Kind)
	case p != nil:
		msg.Message.Parent = p
	}
	return nil
}

// reject publishes an error event naming what was rejected, and answers an
// ask with an error message.
func (in *Input) reject(m *nats.Msg, msg *Inbound, err error) {
	if in.OnInput != nil {
		in.OnInput("rejected")
	}
	subject := m.Subject
	if msg != nil && msg.Subject != "" {
		subject = msg.Subject
	}
	in.log.Warn("rejected input", "subject", subject, "err", err)
	payload := m.Data
	if len(payload) > 256 {
		payload = payload[:256]
	}
	if errors.Is(err, bus.ErrDeleted) {
		payload = nil
	}
	p := string(payload)
	if !utf8.ValidString(p) {
		p = fmt.Sprintf("%q", payload)
	}
	e := &agentfleet.Event{
		Type: agentfleet.EventError, Agent: msg.Agent, Session: msg.Session,
		Time: time.Now().UTC(), ErrorMessage: err.Error(), Subject: subject, Payload: p,
	}
	if in.pub != nil {
		in.pub.Emit(e)
	}
	in.answerRejected(m, msg, err)
}

// answerRejected answers rejected input's reply subject, if it has one
// allowed: an approve reply for a decision, an error assistant message
// otherwise.
func (in *Input) answerRejected(m *nats.Msg, msg *Inbound, err error) {
	// A decision that does not parse, subject included, is answered as
	// decisions are.
	approve := msg.Kind == bus.KindApprove || strings.HasPrefix(m.Subject, in.subjects.Prefix+"."+bus.KindApprove+".")
	if reply := msg.replyTo; reply != "" && approve {
		r := &agentfleet.ApprovalReply{Error: err.Error()}
		if msg.Decision != nil {
			r.ToolCallID = msg.Decision.ToolCallID
		}
		b, _ := json.Marshal(r)
		_ = in.nc.Publish(reply, b)
	} else if reply != "" {
		b, _ := json.Marshal(&agentfleet.AssistantMessage{
			Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{},
			StopReason: agentfleet.StopReasonError, ErrorMessage: err.Error(), Timestamp: time.Now().UTC(),
		})
		_ = in.nc.Publish(reply, b)
	}
}
