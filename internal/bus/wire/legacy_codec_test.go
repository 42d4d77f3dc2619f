package wire

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// The decoders by reflection (vmihailenco/msgpack with struct tags) that the
// hand-written ones of frame_decode.go replaced, kept for the benchmarks that
// compare the two side by side and for TestHandEncodingMatchesTags. They
// trust declared lengths: never feed them a bomb.

// decode decodes data into v. Maps inside untyped values decode as
// map[string]any whatever their keys, since MessagePack allows keys that JSON
// does not.
func legacyDecode(data []byte, v any) error {
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

// legacyDecodeRequest decodes a call request; the error says what is wrong.
func legacyDecodeRequest(data []byte) (*CallRequest, error) {
	var r CallRequest
	if err := legacyDecode(data, &r); err != nil {
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
	r.Args, _ = legacyNormalize(r.Args).(map[string]any)
	if r.Args == nil {
		r.Args = map[string]any{}
	}
	return &r, nil
}

// legacyDecodeFrame decodes a frame; the error says what is wrong.
func legacyDecodeFrame(data []byte) (*Frame, error) {
	var f Frame
	if err := legacyDecode(data, &f); err != nil {
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
		f.Result.Details, _ = legacyNormalize(f.Result.Details).(map[string]any)
	case "":
		return nil, fmt.Errorf("frame has no type (field t)")
	default:
		return nil, fmt.Errorf("frame type %q is unknown", f.T)
	}
	f.Partial = legacyNormalize(f.Partial)
	return &f, nil
}

// legacyNormalize turns maps with non-string keys, which MessagePack allows and
// JSON does not, into maps with string keys, recursively.
func legacyNormalize(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = legacyNormalize(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = legacyNormalize(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = legacyNormalize(e)
		}
		return v
	case []byte:
		return string(v)
	default:
		return v
	}
}
