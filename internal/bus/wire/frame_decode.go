package wire

import (
	"fmt"
	"strconv"
	"unsafe"

	"github.com/agentfleet/agentfleet"
)

// The decoders of call requests, frames and cancels, driven by the same
// field tables as their encoders (frame_fields.go): field by field through
// the bounded reader of decode.go, so that nothing a peer declares is
// allocated before it is checked, and without the reflection of decoding by
// struct tags. Unknown keys are skipped (checked, not built), so that a
// newer peer may add fields.

// Sizes charged to the decode budget for the structs the decoders allocate.
var (
	costRequest = int(unsafe.Sizeof(CallRequest{}))
	costFrame   = int(unsafe.Sizeof(Frame{}))
	costResult  = int(unsafe.Sizeof(agentfleet.ToolResult{}))
	costUsage   = int(unsafe.Sizeof(agentfleet.Usage{}))
	costContent = int(unsafe.Sizeof(agentfleet.Content{}))
)

// DecodeRequest decodes a call request. The error says what is wrong and,
// for a request that is not well-formed MessagePack of the call request's
// shape, is a *DecodeError naming the field and the byte.
func DecodeRequest(data []byte) (*CallRequest, error) {
	r := getReader(data, "call request")
	defer putReader(r)
	req, err := r.request()
	if err != nil {
		return nil, err
	}
	if req.V > ProtocolVersion {
		return nil, fmt.Errorf("call request has protocol version %d, this worker speaks %d", req.V, ProtocolVersion)
	}
	if req.ID == "" {
		return nil, fmt.Errorf("call request has no id")
	}
	if req.Tool == "" {
		return nil, fmt.Errorf("call request %s has no tool name", req.ID)
	}
	if req.Args == nil {
		req.Args = map[string]any{}
	}
	return req, nil
}

// FrameWorker returns the worker field of a frame that may not decode as a
// whole, so that an error about it can name the worker; "" if it has none
// that reads.
func FrameWorker(data []byte) string {
	r := newReader(data, "frame")
	n, err := r.open()
	if err != nil {
		return ""
	}
	for range n {
		k, err := r.key()
		if err != nil {
			return ""
		}
		if string(k) == "worker" {
			w, err := r.str()
			if err != nil || len(w) > 256 {
				return ""
			}
			return w
		}
		if r.skip(2) != nil {
			return ""
		}
	}
	return ""
}

// DecodeFrame decodes a frame of any type; the error says what is wrong (a
// *DecodeError for a frame that does not decode).
func DecodeFrame(data []byte) (*Frame, error) {
	r := getReader(data, "frame")
	defer putReader(r)
	f, err := r.frame(false)
	if err != nil {
		return nil, err
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
	case "":
		return nil, fmt.Errorf("frame has no type (field t)")
	default:
		return nil, fmt.Errorf("frame type %q is unknown", f.T)
	}
	return f, nil
}

// DecodeCancel decodes a cancel frame, as a worker receives it on its
// cancel subject: only t, id and inbox are read; any other field is
// checked and skipped, not built.
func DecodeCancel(data []byte) (*Frame, error) {
	r := getReader(data, "cancel")
	defer putReader(r)
	f, err := r.frame(true)
	if err != nil {
		return nil, err
	}
	switch f.T {
	case FrameCancel:
	case "":
		return nil, fmt.Errorf("cancel has no type (field t)")
	default:
		return nil, fmt.Errorf("cancel has type %q, want %q", f.T, FrameCancel)
	}
	if f.ID == "" {
		return nil, fmt.Errorf("cancel has no id")
	}
	return f, nil
}

// open reads the head of the map that is the whole message and returns its
// number of entries.
func (r *reader) open() (int, *DecodeError) {
	if len(r.b) == 0 {
		return 0, r.errAt(0, "is not a MessagePack map: it is empty")
	}
	if c := r.b[0]; c&0xf0 != 0x80 && c != 0xde && c != 0xdf {
		return 0, r.errAt(0, "is not a MessagePack map: it starts with byte 0x%02x", c)
	}
	h, err := r.next()
	if err != nil {
		err.Reason = "is a " + err.Reason
		return 0, err
	}
	return h.n, nil
}

// close checks that nothing follows the message's map.
func (r *reader) close() *DecodeError {
	if r.left() > 0 {
		return r.errAt(r.off, "has %d bytes after its map", r.left())
	}
	return nil
}

func (r *reader) request() (*CallRequest, *DecodeError) {
	if err := r.charge(0, costRequest); err != nil {
		return nil, err
	}
	n, err := r.open()
	if err != nil {
		return nil, err
	}
	req := new(CallRequest)
	if err := decodeFields(r, requestFields, req, n, 2, nil); err != nil {
		return nil, err
	}
	if err := r.close(); err != nil {
		return nil, err
	}
	return req, nil
}

// frame reads a frame; cancelOnly skips every field but those of a cancel.
func (r *reader) frame(cancelOnly bool) (*Frame, *DecodeError) {
	if err := r.charge(0, costFrame); err != nil {
		return nil, err
	}
	n, err := r.open()
	if err != nil {
		return nil, err
	}
	f := new(Frame)
	var keep func([]byte) bool
	if cancelOnly {
		keep = cancelField
	}
	if err := decodeFields(r, frameFields, f, n, 2, keep); err != nil {
		return nil, err
	}
	if err := r.close(); err != nil {
		return nil, err
	}
	return f, nil
}

func cancelField(k []byte) bool {
	switch string(k) {
	case "t", "id", "inbox":
		return true
	}
	return false
}

// strings reads an array of strings; nil is a nil slice.
func (r *reader) strings(depth int) ([]string, *DecodeError) {
	off := r.off
	n, err := r.arrayLen(depth)
	if err != nil || n < 0 {
		return nil, err
	}
	if err := r.charge(off, 16*n); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = r.str(); err != nil {
			return nil, err.under("[" + strconv.Itoa(i) + "]")
		}
	}
	return out, nil
}

// result reads a tool result map; nil is a nil result. depth is the map's
// own level.
func (r *reader) result(depth int) (*agentfleet.ToolResult, *DecodeError) {
	off := r.off
	n, err := r.mapLen(depth)
	if err != nil || n < 0 {
		return nil, err
	}
	if err := r.charge(off, costResult); err != nil {
		return nil, err
	}
	res := new(agentfleet.ToolResult)
	if err := decodeFields(r, resultFields, res, n, depth+1, nil); err != nil {
		return nil, err
	}
	return res, nil
}

func (r *reader) contents(depth int) ([]agentfleet.Content, *DecodeError) {
	off := r.off
	n, err := r.arrayLen(depth)
	if err != nil || n < 0 {
		return nil, err
	}
	if err := r.charge(off, costContent*n); err != nil {
		return nil, err
	}
	out := make([]agentfleet.Content, n)
	for i := range out {
		if err := r.content(&out[i], depth+1); err != nil {
			return nil, err.under("[" + strconv.Itoa(i) + "]")
		}
	}
	return out, nil
}

// content reads a content block of a result: only text and image blocks
// are valid there (Content.Validate), so the fields of tool call blocks
// are skipped.
func (r *reader) content(c *agentfleet.Content, depth int) *DecodeError {
	n, err := r.mapLen(depth)
	if err != nil || n < 0 {
		return err
	}
	return decodeFields(r, contentFields, c, n, depth+1, nil)
}

func (r *reader) usage(depth int) (*agentfleet.Usage, *DecodeError) {
	off := r.off
	n, err := r.mapLen(depth)
	if err != nil || n < 0 {
		return nil, err
	}
	if err := r.charge(off, costUsage); err != nil {
		return nil, err
	}
	u := new(agentfleet.Usage)
	if err := decodeFields(r, usageFields, u, n, depth+1, nil); err != nil {
		return nil, err
	}
	return u, nil
}
