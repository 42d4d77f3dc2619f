package wire

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// EncodeRequestBuf encodes r as EncodeRequest does, into a buffer of the
// pool, to be given back with PutBuffer once sent: the client sends from it
// instead of a copy. On error the buffer is already given back.
func EncodeRequestBuf(r CallRequest) (*bytes.Buffer, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	enc := msgpack.GetEncoder()
	enc.Reset(buf)
	enc.UseCompactFloats(true)
	enc.UseCompactInts(true)
	enc.SetOmitEmpty(false)
	err := r.EncodeMsgpack(enc)
	msgpack.PutEncoder(enc)
	if err != nil {
		PutBuffer(buf)
		return nil, err
	}
	return buf, nil
}

// PutBuffer gives a buffer back to bufPool, unless it grew large.
func PutBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
}
