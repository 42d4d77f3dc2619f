package wire

import (
	"bytes"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/vmihailenco/msgpack/v5"
)

// ProtocolVersion is the version of the tool frames; a worker refuses a
// request of a newer major version.
const ProtocolVersion = 1

// Frame types on a call's reply inbox (see docs/PROTOCOL.md).
const (
	FrameAck       = "ack"      // the worker took the call
	FrameBusy      = "busy"     // the worker is at its concurrency limit, or draining
	FrameProgress  = "progress" // a partial result
	FrameHeartbeat = "hb"       // the call still runs
	FrameResult    = "result"   // final: the tool's result
	FrameError     = "error"    // final: the call could not run
	FrameCancel    = "cancel"   // orchestrator → worker: stop the call
)

// Error codes of error frames; they are also the Nats-Service-Error-Code
// header of the final reply.
const (
	CodeBadRequest = "400"
	CodeNotFound   = "404"
	CodeTooLarge   = "413"
	// CodeFenced: the call carries the fence of a partition owner that a
	// later claim replaced (the worker saw a higher epoch); it did not run.
	CodeFenced      = "409"
	CodeUnavailable = "503"
	CodeInternal    = "500"
)

// CallRequest is the body of a request on a tool subject.
type CallRequest struct {
	V         int            `msgpack:"v"`
	ID        string         `msgpack:"id"`
	Tool      string         `msgpack:"tool"`
	Args      map[string]any `msgpack:"args"`
	TimeoutMS int64          `msgpack:"timeout_ms,omitempty"`
	Attempt   int            `msgpack:"attempt,omitempty"`
	Agent     string         `msgpack:"agent,omitempty"`
	Session   string         `msgpack:"session,omitempty"`
	RunID     string         `msgpack:"run_id,omitempty"`
	// Allowed lists the tools the calling agent may use without a person's
	// approval; set on calls to scripted tools, whose call_tool may reach
	// only these.
	Allowed []string `msgpack:"allowed,omitempty"`
	// Gated lists the tools of the calling agent that are not in Allowed
	// because their calls need a person's decision; set with Allowed, so
	// that call_tool's refusal can say why. It grants nothing.
	Gated []string `msgpack:"gated,omitempty"`
}

// Frame is one message on a call's reply inbox, or a cancel sent to a
// worker. T says which fields are set.
type Frame struct {
	T  string `msgpack:"t"`
	ID string `msgpack:"id,omitempty"`
	// ack, busy
	Worker      string `msgpack:"worker,omitempty"`
	Cancel      string `msgpack:"cancel,omitempty"`
	HeartbeatMS int64  `msgpack:"hb_ms,omitempty"`
	InFlight    int    `msgpack:"in_flight,omitempty"`
	Limit       int    `msgpack:"limit,omitempty"`
	// progress
	Partial any `msgpack:"partial,omitempty"`
	// result
	Result  *agentfleet.ToolResult `msgpack:"result,omitempty"`
	IsError bool                   `msgpack:"is_error,omitempty"`
	// error
	Error string `msgpack:"error,omitempty"`
	Code  string `msgpack:"code,omitempty"`
	// cancel: the reply inbox of the call to cancel
	Inbox string `msgpack:"inbox,omitempty"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encode returns the MessagePack form of v in a new slice. Integral floats
// are written as integers, so that a worker in any language reads 3, not 3.0,
// for an integer argument that crossed JSON.
func encode(v any) ([]byte, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := msgpack.GetEncoder()
	enc.Reset(buf)
	enc.UseCompactFloats(true)
	enc.UseCompactInts(true)
	enc.SetOmitEmpty(false)
	err := enc.Encode(v)
	msgpack.PutEncoder(enc)
	out := bytes.Clone(buf.Bytes())
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
	return out, err
}

// EncodeRequest encodes a call request.
func EncodeRequest(r *CallRequest) ([]byte, error) { return encode(r) }

// EncodeFrame encodes a frame.
func EncodeFrame(f *Frame) ([]byte, error) { return encode(f) }

// The range of heartbeat intervals: what a worker announces in the hb_ms of
// its ack is clamped to it by the client, and a worker configured outside it
// beats at the nearest bound. Below MinHeartbeat heartbeats would be most of
// the traffic; above MaxHeartbeat a worker could all but switch loss
// detection off, and hb_ms × misses could overflow into a negative window.
const (
	MinHeartbeat = 10 * time.Millisecond
	MaxHeartbeat = 60 * time.Second
)

// ClampHeartbeat returns d within [MinHeartbeat, MaxHeartbeat].
func ClampHeartbeat(d time.Duration) time.Duration {
	return min(max(d, MinHeartbeat), MaxHeartbeat)
}

// HeartbeatWindow returns how long a client waits for the next frame of a
// call whose worker announced hbMS (the ack's hb_ms, in milliseconds):
// misses intervals of hbMS clamped to the heartbeat range. ok is false when
// the worker announced none (hbMS ≤ 0), and the client keeps its own
// window. misses is taken within [1, 1000], so that the product cannot
// overflow.
func HeartbeatWindow(hbMS int64, misses int) (window time.Duration, ok bool) {
	if hbMS <= 0 {
		return 0, false
	}
	hb := MaxHeartbeat
	if hbMS < int64(MaxHeartbeat/time.Millisecond) {
		hb = ClampHeartbeat(time.Duration(hbMS) * time.Millisecond)
	}
	return hb * time.Duration(min(max(misses, 1), 1000)), true
}
