package wire

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// The worker encodes its frames into buffers of bufPool and puts them back
// once published: nats.Conn.Publish and PublishMsg copy the data into the
// connection's write buffer (or its reconnect buffer) before they return,
// so no frame holds a buffer past its publication.

// EncodeFrameBuf encodes f as EncodeFrame does, into a buffer of the pool.
// Give the buffer back with PutFrameBuf, error or not.
func EncodeFrameBuf(f *Frame) (*bytes.Buffer, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := msgpack.GetEncoder()
	enc.Reset(buf)
	enc.UseCompactFloats(true)
	enc.UseCompactInts(true)
	enc.SetOmitEmpty(false)
	err := f.EncodeMsgpack(enc)
	msgpack.PutEncoder(enc)
	return buf, err
}

// PutFrameBuf gives buf back to the pool, unless it grew large.
func PutFrameBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
}
