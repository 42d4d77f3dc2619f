package bus

import (
	"bytes"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"
)

// The worker encodes its frames into buffers of bufPool and puts them back
// once published: nats.Conn.Publish and PublishMsg copy the data into the
// connection's write buffer (or its reconnect buffer) before they return,
// so no frame holds a buffer past its publication.

// encodeFrameBuf encodes f as EncodeFrame does, into a buffer of the pool.
// Give the buffer back with putFrameBuf, error or not.
func encodeFrameBuf(f *Frame) (*bytes.Buffer, error) {
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

// putFrameBuf gives buf back to the pool, unless it grew large.
func putFrameBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
}

// publishFrame encodes f and publishes it on subject.
func publishFrame(nc *nats.Conn, subject string, f *Frame) error {
	buf, err := encodeFrameBuf(f)
	if err == nil {
		err = nc.Publish(subject, buf.Bytes())
	}
	putFrameBuf(buf)
	return err
}
