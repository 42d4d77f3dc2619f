package input

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/delegate"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
)

// Headers of a relayed ask or abort (subject <prefix>.relay.<agent>.<session>
// in the input stream).
const (
	// HeaderKind is the client kind relayed: ask or abort.
	HeaderKind = "Agentfleet-Kind"
	// HeaderReply is the reply subject of the client's request, answered
	// by the session's owner; absent for an abort published without one.
	HeaderReply = "Agentfleet-Reply"
	// The client's W3C trace context (traceparent, tracestate) is copied
	// too, so that the run is traced under it.
	//
	// HeaderMsgID carries the client's Nats-Msg-Id. It is not sent as
	// Nats-Msg-Id, so that the stream does not drop an ask sent again with
	// the same id: the owner answers it from the stored history instead.
	HeaderMsgID = "Agentfleet-Msg-Id"
)

// relay stores a core ask or abort in the input stream under the relay
// subject of its session, so that it reaches the session's owner through
// the partitioned stream whichever orchestrator the server gave it to, and
// survives that owner: the owner answers on the stored reply subject.
func (in *Input) relay(m *nats.Msg, msg *Inbound) {
	h := nats.Header{}
	h.Set(HeaderKind, msg.Kind)
	if msg.replyTo != "" { // checked by parse
		h.Set(HeaderReply, msg.replyTo)
	}
	if m.Header != nil {
		if id := m.Header.Get(nats.MsgIdHdr); id != "" {
			h.Set(HeaderMsgID, id)
		}
		// The parent of an ask sent by an ask tool and its budget,
		// checked by parse.
		for _, k := range delegate.AllHeaders {
			if v := m.Header.Get(k); v != "" {
				h.Set(k, v)
			}
		}
	}
	if msg.Trace.IsValid() {
		tracing.Inject(trace.ContextWithRemoteSpanContext(context.Background(), msg.Trace), h)
	}
	// An ask is stored on the condition that its session has no other
	// input in the stream (firstinput.go), and stored again without it if
	// it has.
	first := msg.Kind == bus.KindAsk
	if first {
		expectFirst(h, in.subjects.StoredSession(msg.Agent, msg.Session))
	}
	in.publishRelay(m, msg, h, first)
}

// publishRelay publishes a relayed message of headers h; first says it
// carries the condition of expectFirst. It is published asynchronously: the
// subscription goes on to the next message while the server stores this
// one (relayAcks).
func (in *Input) publishRelay(m *nats.Msg, msg *Inbound, h nats.Header, first bool) {
	in.relays.publish(in.subjects.Client(bus.KindRelay, msg.Agent, msg.Session), relayWait{m: m, msg: msg, h: h, first: first})
}

func (in *Input) relayFailed(m *nats.Msg, msg *Inbound, err error) {
	if in.OnInput != nil {
		in.OnInput("retried")
	}
	in.reject(m, msg, fmt.Errorf("%s could not be stored for the session's orchestrator: %v; try again", msg.Kind, err))
}

// Relayed tells an input that its ask, abort and approve subjects are relayed
// through js's input stream (several orchestrators share the sessions), and
// subscribes them in the orchestrators' queue group.
func (in *Input) Relayed(js jetstream.JetStream) {
	in.js = js
	in.Kinds = []string{bus.KindAsk, bus.KindAbort, bus.KindApprove}
	in.Queue = QueueInput
}
