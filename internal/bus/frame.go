package bus

import (
	"bytes"
	"fmt"
	"sync"

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
	CodeBadRequest  = "400"
	CodeNotFound    = "404"
	CodeTooLarge    = "413"
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
	// Allowed lists the tools the calling agent may use; set on calls to
	// scripted tools, whose call_tool may reach only these.
	Allowed []string `msgpack:"allowed,omitempty"`
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

// decode decodes data into v. Maps inside untyped values decode as
// map[string]any whatever their keys, since MessagePack allows keys that JSON
// does not.
func decode(data []byte, v any) error {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(bytes.NewReader(data))
	dec.SetMapDecoder(decodeMap)
	return dec.Decode(v)
}

func decodeMap(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	m := make(map[string]any, min(n, 64))
	for range n {
		k, err := d.DecodeInterface()
		if err != nil {
			return nil, err
		}
		v, err := d.DecodeInterface()
		if err != nil {
			return nil, err
		}
		if ks, ok := k.(string); ok {
			m[ks] = v
		} else {
			m[fmt.Sprint(k)] = v
		}
	}
	return m, nil
}

// DecodeRequest decodes a call request; the error says what is wrong.
func DecodeRequest(data []byte) (*CallRequest, error) {
	var r CallRequest
	if err := decode(data, &r); err != nil {
		return nil, fmt.Errorf("call request is not a MessagePack map of the call frame: %w", err)
	}
	if r.V > ProtocolVersion {
		return nil, fmt.Errorf("call request has protocol version %d, this worker speaks %d", r.V, ProtocolVersion)
	}
	if r.ID == "" {
		return nil, fmt.Errorf("call request has no id")
	}
	if r.Tool == "" {
		return nil, fmt.Errorf("call request %s has no tool name", r.ID)
	}
	r.Args, _ = normalize(r.Args).(map[string]any)
	if r.Args == nil {
		r.Args = map[string]any{}
	}
	return &r, nil
}

// DecodeFrame decodes a frame; the error says what is wrong.
func DecodeFrame(data []byte) (*Frame, error) {
	var f Frame
	if err := decode(data, &f); err != nil {
		return nil, fmt.Errorf("frame is not a MessagePack map of a tool frame: %w", err)
	}
	switch f.T {
	case FrameAck, FrameBusy, FrameProgress, FrameHeartbeat, FrameError, FrameCancel:
	case FrameResult:
		if f.Result == nil {
			return nil, fmt.Errorf("result frame has no result")
		}
		for i, c := range f.Result.Content {
			if err := c.Validate(); err != nil {
				return nil, fmt.Errorf("result frame: content block %d: %w", i, err)
			}
		}
		f.Result.Details, _ = normalize(f.Result.Details).(map[string]any)
	case "":
		return nil, fmt.Errorf("frame has no type (field t)")
	default:
		return nil, fmt.Errorf("frame type %q is unknown", f.T)
	}
	f.Partial = normalize(f.Partial)
	return &f, nil
}

// normalize turns maps with non-string keys, which MessagePack allows and
// JSON does not, into maps with string keys, recursively.
func normalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = normalize(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
		return v
	case []byte:
		return string(v)
	default:
		return v
	}
}
