package toolrpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// hostileReplies are reply subjects a client may put on a request to have
// the answering process publish there with its own rights.
var hostileReplies = []string{
	"$KV.agent_tools.double",
	"$KV.AGENT_PARTITIONS.33",
	"$JS.API.STREAM.DELETE.AGENT_INPUT",
	"agent.history.default.demo",
	"agent.out.default.victim",
	"agent.events.default.victim.run.end",
	"agent.tool.other",
}

// TestWorkerAnswersOnlyInboxes sends every request a worker answers (each
// control subject of the micro protocol, and a call) with each hostile
// reply, then the same request with an inbox of the same connection: the
// worker publishes in order, so an answer on a hostile subject would
// arrive before the inbox's answer.
func TestWorkerAnswersOnlyInboxes(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	ws, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "w", Tools: []*agentfleet.Tool{echoTool("echo")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Stop() })
	spy := bustest.MustConnect(t, srv)
	got := make(chan *nats.Msg, 64)
	for _, subject := range append([]string{"_INBOX.spy.>"}, hostileReplies...) {
		if _, err := spy.ChanSubscribe(subject, got); err != nil {
			t.Fatal(err)
		}
	}
	call, err := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "c1", Tool: "echo", Args: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	requests := map[string][]byte{"agent.tool.echo": call}
	for _, verb := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
		for _, ids := range [][2]string{{"", ""}, {"w", ""}, {"w", ws.ID()}} {
			subject, _ := micro.ControlSubject(verb, ids[0], ids[1])
			requests[subject] = nil
		}
	}
	n := 0
	for subject, data := range requests {
		for _, reply := range hostileReplies {
			if err := spy.PublishRequest(subject, reply, data); err != nil {
				t.Fatal(err)
			}
		}
		n++
		inbox := fmt.Sprintf("_INBOX.spy.%d", n)
		if err := spy.PublishRequest(subject, inbox, data); err != nil {
			t.Fatal(err)
		}
	wait:
		for {
			select {
			case m := <-got:
				if !strings.HasPrefix(m.Subject, "_INBOX.spy.") {
					t.Fatalf("a request on %s was answered on %s: %.200s", subject, m.Subject, m.Data)
				}
				if m.Subject == inbox {
					break wait
				}
				// A later frame of the call's inbox.
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to %s on an inbox", subject)
			}
		}
	}
	if r := ws.NoReply(); r < uint64(len(hostileReplies)) {
		t.Errorf("NoReply = %d, want at least %d (the hostile calls)", r, len(hostileReplies))
	}
}

// TestWorkerServiceInfo checks that the worker speaks micro's protocol: a
// micro client sees its identity, endpoints and stats, errors included.
func TestWorkerServiceInfo(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	ws, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "w", Version: "1.2.3", Tools: []*agentfleet.Tool{echoTool("echo")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Stop() })
	nc := bustest.MustConnect(t, srv)
	var ping micro.Ping
	request(t, nc, "$SRV.PING.w", nil, &ping)
	if ping.Type != micro.PingResponseType || ping.Name != "w" || ping.ID != ws.ID() || ping.Version != "1.2.3" {
		t.Errorf("ping = %+v", ping)
	}
	var info micro.Info
	request(t, nc, "$SRV.INFO.w."+ws.ID(), nil, &info)
	if info.Type != micro.InfoResponseType || len(info.Endpoints) != 1 || info.Endpoints[0].Subject != "agent.tool.echo" ||
		info.Endpoints[0].QueueGroup != bus.QueueGroup || info.Metadata[fleet.MetaProtocol] == "" || info.Endpoints[0].Metadata["input_schema"] == "" {
		t.Errorf("info = %+v", info)
	}
	// One good call and one bad request.
	call, _ := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "c1", Tool: "echo", Args: map[string]any{"text": "hi"}})
	sub, _ := nc.SubscribeSync(nc.NewRespInbox())
	nc.PublishRequest("agent.tool.echo", sub.Subject, call)
	for {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := wire.DecodeFrame(m.Data); f != nil && f.T == wire.FrameResult {
			break
		}
	}
	if _, err := nc.Request("agent.tool.echo", []byte("not msgpack"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	var stats micro.Stats
	request(t, nc, "$SRV.STATS.w", nil, &stats)
	if len(stats.Endpoints) != 1 {
		t.Fatalf("stats = %+v", stats)
	}
	e := stats.Endpoints[0]
	if e.NumRequests != 2 || e.NumErrors != 1 || e.LastError == "" || stats.Started.IsZero() {
		t.Errorf("endpoint stats = %+v, want 2 requests, 1 error", e)
	}
	var load fleet.WorkerLoad
	if err := json.Unmarshal(e.Data, &load); err != nil {
		t.Errorf("stats data %s: %v", e.Data, err)
	}
}

func request(t *testing.T, nc *nats.Conn, subject string, data []byte, v any) {
	t.Helper()
	m, err := nc.Request(subject, data, 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("%s: %s: %v", subject, m.Data, err)
	}
}

// TestStatsCoverTheCall checks that `nats micro stats` counts a call's
// whole run, not only its handler, which hands the call to a goroutine and
// returns at once: a tool that works for 300 ms shows at least that much
// processing time, and a tool that fails counts as an error naming the
// tool and its outcome, not the tool's own text.
func TestStatsCoverTheCall(t *testing.T) {
	const work = 300 * time.Millisecond
	slow := &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{Name: "slow", Description: "works a while", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if c.Arguments["fail"] == true {
				return nil, errors.New("secret detail")
			}
			time.Sleep(work) // the work whose time the stats must show
			return agentfleet.TextResult("done"), nil
		}),
	}
	srv := bustest.MustRunNATS(t)
	ws, err := toolrpc.Serve(bustest.MustConnect(t, srv), toolrpc.ServerConfig{Name: "w", Tools: []*agentfleet.Tool{slow}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Stop() })
	nc := bustest.MustConnect(t, srv)
	for i, args := range []map[string]any{{}, {"fail": true}} {
		call, _ := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: fmt.Sprint("c", i), Tool: "slow", Args: args})
		sub, _ := nc.SubscribeSync(nc.NewRespInbox())
		nc.PublishRequest("agent.tool.slow", sub.Subject, call)
		for final := false; !final; {
			m, err := sub.NextMsg(10 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			f, _ := wire.DecodeFrame(m.Data)
			final = f != nil && (f.T == wire.FrameResult || f.T == wire.FrameError)
		}
		sub.Unsubscribe()
	}
	var stats micro.Stats
	request(t, nc, "$SRV.STATS.w", nil, &stats)
	if len(stats.Endpoints) != 1 {
		t.Fatalf("stats = %+v", stats)
	}
	e := stats.Endpoints[0]
	if e.NumRequests != 2 || e.ProcessingTime < work {
		t.Errorf("endpoint stats = %d requests in %v, want 2 in at least %v (the call's work)", e.NumRequests, e.ProcessingTime, work)
	}
	if e.NumErrors != 1 || e.LastError != "tool slow: error" {
		t.Errorf("endpoint errors = %d, last %q; want 1, %q", e.NumErrors, e.LastError, "tool slow: error")
	}
}
