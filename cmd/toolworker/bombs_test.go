package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go/micro"
)

// fixstr returns s as a MessagePack fixstr.
func fixstr(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }

// bombs returns the messages of an attacker who can publish on the fleet's
// subjects: declared lengths far beyond the message (each the 29-byte kind
// that killed the worker with vmihailenco/msgpack), deep nesting, then
// random bytes and mutations of a good request, all of at most 1 KiB.
func bombs(good []byte) [][]byte {
	values := [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff}, // array32
		{0xdf, 0xff, 0xff, 0xff, 0xff}, // map32
		{0xdb, 0xff, 0xff, 0xff, 0xff}, // str32
		{0xc6, 0xff, 0xff, 0xff, 0xff}, // bin32
		{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		bytes.Repeat([]byte{0x91}, 1000),
		append(bytes.Repeat([]byte{0x81, 0xa0}, 500), 0xc0),
	}
	var out [][]byte
	for _, v := range values {
		// {"v":1,"id":"c","tool":"echo","args":{"a":<v>}}
		out = append(out, bytes.Join([][]byte{{0x84}, fixstr("v"), {1}, fixstr("id"), fixstr("c"), fixstr("tool"), fixstr("echo"), fixstr("args"), {0x81}, fixstr("a"), v}, nil))
		out = append(out, v)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, rng.IntN(1025))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		out = append(out, b)
	}
	for range 300 {
		b := bytes.Clone(good)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = []byte{0xdd, 0xdf, 0xdb, 0xc6, 0xff, 0x00}[rng.IntN(6)]
		}
		out = append(out, b)
	}
	return out
}

// peakRSS returns the peak resident set of process pid (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}

// TestBombsKeepTheWorkerServing publishes bombs from a raw NATS client on
// every subject a worker process listens to: its tool subject, with and
// without a reply subject, and its cancel subject. The worker stays up,
// answers each bad request with a one-line error header, keeps its memory,
// runs no request without a reply subject, and goes on serving: a good call
// and a good cancel work afterwards.
func TestBombsKeepTheWorkerServing(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	raw := bustest.MustConnect(t, srv) // the attacker
	child, id := startChildID(t, nc, "--nats-url "+srv.ClientURL()+" --tools echo,sleep --heartbeat 100ms --name target")
	rssBefore := peakRSS(t, child.Process.Pid)

	good, err := wire.EncodeRequest(&wire.CallRequest{V: 1, ID: "c", Tool: "echo", Args: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	replies, err := raw.SubscribeSync(raw.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	if err := replies.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for _, b := range bombs(good) {
		if err := raw.PublishRequest("agent.tool.echo", replies.Subject, b); err != nil {
			t.Fatal(err)
		}
		if err := raw.Publish("agent.tool.echo", b); err != nil { // no reply subject
			t.Fatal(err)
		}
		sent++
	}

	// A call through the client: its answer comes after the worker has
	// handled every bomb, since one subscription takes them in order.
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	echo := &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo"}},
		Call: agentfleet.ToolCall{ID: "after-bombs", Name: "echo"}, Args: map[string]any{"text": "still here"}, Timeout: 10 * time.Second,
	}
	res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), echo, func(any) {})
	if err != nil || agentfleet.JoinText(res.Content) != "still here" {
		t.Fatalf("good call after the bombs: %v, %v", res, err)
	}

	// Every bomb with a reply subject got an answer (an error frame, or the
	// result of a mutation that still was a good request), each header one
	// valid line.
	badRequests := 0
	for range sent {
		m, err := replies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("answers to %d bombs of %d: %v", badRequests, sent, err)
		}
		desc := m.Header.Get(micro.ErrorHeader)
		if desc == "" || desc == "tool error" {
			continue // a mutation that still was a request, and ran
		}
		if badRequests++; badRequests == 1 {
			t.Logf("a bad request's answer: %s: %s", micro.ErrorHeader, desc)
		}
		if len(desc) > bus.MaxHeaderValue || !utf8.ValidString(desc) || strings.ContainsAny(desc, "\r\n") {
			t.Errorf("header %s: %q", micro.ErrorHeader, desc)
		}
		if code := m.Header.Get(micro.ErrorCodeHeader); code != wire.CodeBadRequest {
			t.Errorf("code %q for %q, want 400", code, desc)
		}
	}
	t.Logf("%d bombs with a reply subject, %d answered as bad requests, the rest ran", sent, badRequests)

	// The cancel subject: a call runs, bombs arrive on the worker's cancel
	// subject, then a good cancel, which must still stop the call.
	inbox := raw.NewRespInbox()
	frames, err := raw.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	sleepReq, _ := wire.EncodeRequest(&wire.CallRequest{V: 1, ID: "long", Tool: "sleep", Args: map[string]any{"ms": 60_000}, TimeoutMS: 120_000})
	if err := raw.PublishRequest("agent.tool.sleep", inbox, sleepReq); err != nil {
		t.Fatal(err)
	}
	var cancelSubject string
	for cancelSubject == "" {
		m, err := frames.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("no ack from the sleep call: %v", err)
		}
		if f, err := wire.DecodeFrame(m.Data); err == nil && f.T == wire.FrameAck {
			cancelSubject = f.Cancel
		}
	}
	if want := "agent.worker." + id + ".cancel"; cancelSubject != want {
		t.Errorf("cancel subject %q, want %q", cancelSubject, want)
	}
	cancelGood, _ := wire.EncodeFrame(&wire.Frame{T: wire.FrameCancel, ID: "long", Inbox: inbox})
	for _, b := range bombs(cancelGood) {
		if err := raw.Publish(cancelSubject, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Publish(cancelSubject, cancelGood); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := frames.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("the sleep call did not end after the cancel: %v", err)
		}
		f, err := wire.DecodeFrame(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		if f.T == wire.FrameResult {
			if !f.IsError || !strings.Contains(agentfleet.JoinText(f.Result.Content), "canceled by the orchestrator") {
				t.Errorf("sleep result %q, want canceled by the orchestrator", agentfleet.JoinText(f.Result.Content))
			}
			break
		}
	}

	if child.ProcessState != nil {
		t.Fatalf("the worker exited: %v", child.ProcessState)
	}
	rssAfter := peakRSS(t, child.Process.Pid)
	t.Logf("worker peak RSS %d KiB before the bombs, %d KiB after", rssBefore>>10, rssAfter>>10)
	if grew := rssAfter - rssBefore; grew > 32<<20 {
		t.Errorf("the worker's peak RSS grew by %d MiB under the bombs", grew>>20)
	}
}
