package orchestrator_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// ackDropper is a TCP proxy between one NATS client and the server that
// can lose the client's JetStream acknowledgements (its publishes on
// $JS.ACK.…), as a server that dies before it stores them loses them;
// everything else passes unchanged.
type ackDropper struct {
	ln      net.Listener
	target  string
	drop    atomic.Bool
	dropped atomic.Int64
	wg      sync.WaitGroup
}

func newAckDropper(t *testing.T, target string) *ackDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ackDropper{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *ackDropper) url() string { return "nats://" + p.ln.Addr().String() }

func (p *ackDropper) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.wg.Go(func() { io.Copy(c, s); c.Close() })
		p.wg.Go(func() { p.clientToServer(c, s); s.Close() })
	}
}

// clientToServer copies the client's protocol to the server a line at a
// time, with the payload of each PUB and HPUB, leaving out the publishes on
// $JS.ACK.… while drop is set.
func (p *ackDropper) clientToServer(c, s net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var payload []byte
		f := bytes.Fields(line)
		if len(f) >= 3 && (bytes.EqualFold(f[0], []byte("PUB")) || bytes.EqualFold(f[0], []byte("HPUB"))) {
			n, err := strconv.Atoi(string(f[len(f)-1]))
			if err != nil {
				return
			}
			payload = make([]byte, n+2) // and its \r\n
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			if p.drop.Load() && bytes.HasPrefix(f[1], []byte("$JS.ACK.")) {
				p.dropped.Add(1)
				continue
			}
		}
		if _, err := s.Write(append(line, payload...)); err != nil {
			return
		}
	}
}

// TestCopyAnsweredOnce sends a message, then another stream message with
// the same id after its answer was stored, and loses the orchestrator's
// acknowledgements of that copy, so that the server delivers it again and
// again (as after a server that died before it stored the ack): the copy
// gets the stored answer on the out subject once, its redeliveries none.
// Once the acks pass again, a new message of the session is answered; every
// out message before its answer is counted.
func TestCopyAnsweredOnce(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	proxy := newAckDropper(t, srv.Addr().String())
	oc, err := bus.Connect(bus.ConnectConfig{URL: proxy.url()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(oc.Close)
	obs := &counts{}
	model := newScript().on("once", say("the answer"), say("the next answer"))
	o, err := orchestrator.New(oc, orchestrator.Config{Model: model, Durable: true, Observer: obs,
		DurableConfig: input.DurableConfig{AckWait: 300 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o.Close(ctx)
	})
	out := outs(t, nc, "default", "once")
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(context.Background(), "AGENT_INPUT")
	if err != nil {
		t.Fatal(err)
	}
	settled := func() bool {
		info, err := stream.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	}

	publish(t, nc, "agent.in.default.once", "", `{"content":"ask","id":"m1"}`)
	if got := agentfleet.JoinText(next(t, out).Content); got != "the answer" {
		t.Fatalf("answer = %q", got)
	}
	bustest.Eventually(t, "the message acknowledged", settled)

	proxy.drop.Store(true)
	publish(t, nc, "agent.in.default.once", "", `{"content":"ask again","id":"m1"}`)
	// Three deliveries of the copy handled: the first, and two after lost
	// acks (each handled to its end before the consumer hands over the next).
	bustest.Eventually(t, "the copy delivered three times", func() bool { return obs.get("duplicate") >= 3 && proxy.dropped.Load() >= 2 })
	proxy.drop.Store(false)
	bustest.Eventually(t, "the copy acknowledged", settled)

	publish(t, nc, "agent.in.default.once", "", `{"content":"next","id":"m2"}`)
	again := 0
	for {
		m := next(t, out)
		if agentfleet.JoinText(m.Content) == "the next answer" {
			break
		}
		again++
	}
	if again != 1 {
		t.Errorf("the copy and its redeliveries got the stored answer %d times, want once", again)
	}
	if n := len(model.requests("once")); n != 2 {
		t.Errorf("model asked %d times, want 2 (the copy is not run)", n)
	}
}
