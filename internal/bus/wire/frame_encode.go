package wire

import (
	"github.com/agentfleet/agentfleet"
	"github.com/vmihailenco/msgpack/v5"
)

// The frames of every call are encoded field by field from their tables
// (frame_fields.go), without the reflection and the boxing that encoding by
// struct tags costs on each call. The output is the same map the tags
// describe (empty optional fields left out), so any MessagePack library
// reads it.

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r *CallRequest) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeFields(enc, requestFields, r)
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (f *Frame) EncodeMsgpack(enc *msgpack.Encoder) error {
	return encodeFields(enc, frameFields, f)
}

func encodeResult(enc *msgpack.Encoder, r *agentfleet.ToolResult) error {
	return encodeFields(enc, resultFields, r)
}

func encodeContent(enc *msgpack.Encoder, c *agentfleet.Content) error {
	if len(c.Arguments) > 0 || len(c.ToolCalls) > 0 {
		return enc.Encode(c) // not a result block: the general path
	}
	return encodeFields(enc, contentFields, c)
}
