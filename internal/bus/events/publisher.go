package events

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
)

// Publisher publishes lifecycle events and final messages as JSON on the
// public subjects. It implements agentfleet.EventSink.
type Publisher struct {
	nc        *nats.Conn
	subjects  bus.Subjects
	log       *slog.Logger
	published atomic.Uint64
	// OnPublish, if set, is called once per published event, with its type.
	OnPublish func(agentfleet.EventType)
}

// NewPublisher returns a publisher on nc under subjects.
func NewPublisher(nc *nats.Conn, subjects bus.Subjects, log *slog.Logger) *Publisher {
	if log == nil {
		log = slog.Default()
	}
	return &Publisher{nc: nc, subjects: subjects, log: log}
}

// Emit publishes e on <prefix>.events.<agent>.<session>.<type>. Agent and
// session that are not valid tokens (an error about a rejected subject) are
// published under "_".
func (p *Publisher) Emit(e *agentfleet.Event) {
	bp := eventBufs.Get().(*[]byte)
	defer putEventBuf(bp)
	b, err := e.AppendJSON((*bp)[:0])
	if err != nil {
		p.log.Error("encode event", "type", e.Type, "err", err)
		return
	}
	*bp = b
	agent, session := e.Agent, e.Session
	if !bus.ValidToken(agent) {
		agent = "_"
	}
	if !bus.ValidToken(session) {
		session = "_"
	}
	if err := p.nc.Publish(p.subjects.Event(agent, session, string(e.Type)), b); err != nil {
		p.log.Warn("publish event", "type", e.Type, "session", e.Session, "err", err)
		return
	}
	p.published.Add(1)
	if p.OnPublish != nil {
		p.OnPublish(e.Type)
	}
}

// eventBufs holds the buffers that Emit encodes events into. Publish copies
// the payload into the connection's write buffer before it returns, so a
// buffer goes back to the pool as soon as Emit is done with it.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxEventBuf bounds the buffers kept in eventBufs, so that one huge event
// does not pin its buffer.
const maxEventBuf = 64 << 10

func putEventBuf(bp *[]byte) {
	if cap(*bp) <= maxEventBuf {
		eventBufs.Put(bp)
	}
}

// Published returns the number of events published.
func (p *Publisher) Published() uint64 { return p.published.Load() }

// PublishOut publishes the final message of a run on
// <prefix>.out.<agent>.<session>.
func (p *Publisher) PublishOut(agent, session string, m *agentfleet.AssistantMessage) {
	b, err := agentfleet.AppendMessageJSON(nil, m)
	if err != nil {
		p.log.Error("encode final message", "session", session, "err", err)
		return
	}
	if err := p.nc.Publish(p.subjects.Out(agent, session), b); err != nil {
		p.log.Warn("publish final message", "session", session, "err", err)
	}
}
