package toolrpc_test

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats.go"
)

func fixstr(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// TestBombFramesFailTheCallNotTheClient answers the client's calls from a
// raw responder in the workers' queue group: an ack (with an hb_ms far past
// the range), then a bomb frame, then a good result. Each call whose frame
// is a bomb ends with an error naming the worker and the field, the call is
// cancelled on the worker's cancel subject, and the client, in this
// process, allocates next to nothing for it; random frames of up to 1 KiB
// end their call one way or the other; a good call works afterwards.
func TestBombFramesFailTheCallNotTheClient(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	raw, cc := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)

	values := [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff}, // array32
		{0xdf, 0xff, 0xff, 0xff, 0xff}, // map32
		{0xdb, 0xff, 0xff, 0xff, 0xff}, // str32
		{0xc6, 0xff, 0xff, 0xff, 0xff}, // bin32
		{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		bytes.Repeat([]byte{0x91}, 1000),
	}
	type bomb struct {
		frame []byte
		want  string // in the call's error; "" for a random frame
	}
	var bombs []bomb
	for _, v := range values {
		// {"t":"progress","id":"c","partial":<v>}: 25 bytes for array32
		bombs = append(bombs,
			bomb{join([]byte{0x83}, fixstr("t"), fixstr("progress"), fixstr("id"), fixstr("c"), fixstr("partial"), v), `frame field "partial`},
			bomb{join([]byte{0x82}, fixstr("t"), fixstr("result"), fixstr("result"), []byte{0x82}, fixstr("content"), []byte{0x90}, fixstr("details"), v), `frame field "result.details"`},
			bomb{v, "frame "})
	}
	crafted := len(bombs)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 100 {
		b := make([]byte, 1+rng.IntN(1024))
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		bombs = append(bombs, bomb{frame: b})
	}

	cancels, err := raw.SubscribeSync("agent.worker.bomber1.cancel")
	if err != nil {
		t.Fatal(err)
	}
	if err := cancels.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	var next atomic.Int64
	good, _ := wire.EncodeFrame(&wire.Frame{T: wire.FrameResult, ID: "c", Worker: "bomber/1", Result: agentfleet.TextResult("fine")})
	ack, _ := wire.EncodeFrame(&wire.Frame{T: wire.FrameAck, ID: "c", Worker: "bomber/1", Cancel: "agent.worker.bomber1.cancel", HeartbeatMS: math.MaxInt64})
	_, err = raw.QueueSubscribe("agent.tool.bombed", bus.QueueGroup, func(m *nats.Msg) {
		i := int(next.Add(1)) - 1
		raw.Publish(m.Reply, ack)
		if i < len(bombs) {
			raw.Publish(m.Reply, bombs[i].frame)
		}
		raw.Publish(m.Reply, good)
	})
	if err != nil {
		t.Fatal(err)
	}
	raw.Flush()

	client, err := toolrpc.NewToolClient(cc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	call := func() (*agentfleet.ToolResult, error) {
		return fleetexec.Executor{Client: client}.Execute(context.Background(), &pipeline.Prepared{
			Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "bombed"}},
			Call: agentfleet.ToolCall{ID: "c", Name: "bombed"}, Args: map[string]any{}, Timeout: 10 * time.Second,
		}, func(any) {})
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i, b := range bombs {
		_, err := call()
		if i >= crafted {
			continue // a random frame may even decode; the call ends either way
		}
		if err == nil || !strings.Contains(err.Error(), "worker bomber/1 sent a bad frame: "+b.want) {
			t.Errorf("bomb %d: err = %v, want a bad frame from bomber/1: %s…", i, err, b.want)
			continue
		}
		m, err := cancels.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("bomb %d: the call was not cancelled on the worker: %v", i, err)
		}
		if f, err := wire.DecodeCancel(m.Data); err != nil || f.ID != "c" {
			t.Errorf("bomb %d: cancel %+v, %v", i, f, err)
		}
	}
	runtime.ReadMemStats(&after)
	// A call through a real NATS server costs some 13 KB (see
	// BenchmarkToolClientExecute); the bombs must add next to nothing.
	perCall := (after.TotalAlloc - before.TotalAlloc) / uint64(len(bombs))
	t.Logf("%d calls answered with bombs: %d bytes allocated per call", len(bombs), perCall)
	if perCall > 64<<10 {
		t.Errorf("%d bytes allocated per call answered with a bomb", perCall)
	}

	res, err := call()
	if err != nil || agentfleet.JoinText(res.Content) != "fine" {
		t.Errorf("good call after the bombs: %v, %v", res, err)
	}
}

// TestHugeHeartbeatIntervalIsClamped acks a call with an hb_ms whose
// product with the misses overflowed into a negative window, which declared
// the worker lost at once: now clamped, the window is long, and the result
// that comes after a while (no heartbeat meanwhile) is the call's.
func TestHugeHeartbeatIntervalIsClamped(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	raw, cc := bustest.MustConnect(t, srv), bustest.MustConnect(t, srv)
	ack, _ := wire.EncodeFrame(&wire.Frame{T: wire.FrameAck, ID: "c", Worker: "slow/1", Cancel: "slow.cancel", HeartbeatMS: math.MaxInt64 / 1000})
	good, _ := wire.EncodeFrame(&wire.Frame{T: wire.FrameResult, ID: "c", Worker: "slow/1", Result: agentfleet.TextResult("late but fine")})
	_, err := raw.QueueSubscribe("agent.tool.slow", bus.QueueGroup, func(m *nats.Msg) {
		raw.Publish(m.Reply, ack)
		raw.Flush()
		go func() {
			// A worker that takes its time, as one whose hb_ms is large may.
			<-time.After(200 * time.Millisecond)
			raw.Publish(m.Reply, good)
		}()
	})
	if err != nil {
		t.Fatal(err)
	}
	raw.Flush()
	client, err := toolrpc.NewToolClient(cc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "slow"}},
		Call: agentfleet.ToolCall{ID: "c", Name: "slow"}, Args: map[string]any{}, Timeout: 10 * time.Second,
	}, func(any) {})
	if err != nil || agentfleet.JoinText(res.Content) != "late but fine" {
		t.Errorf("call acked with a huge hb_ms: %v, %v", res, err)
	}
}
