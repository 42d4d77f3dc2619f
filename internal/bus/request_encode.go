package bus

import (
	"bytes"

	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/vmihailenco/msgpack/v5"
)

// encodeCall encodes the call request of one attempt of prep into a buffer
// of bufPool, to be given back with putBuffer once sent: the client sends
// from it instead of a copy.
func encodeCall(prep *pipeline.Prepared, attempt int) (*bytes.Buffer, error) {
	r := CallRequest{
		V: ProtocolVersion, ID: prep.Call.ID, Tool: prep.Call.Name, Args: prep.Args,
		TimeoutMS: prep.Timeout.Milliseconds(), Attempt: attempt,
		Agent: prep.Agent, Session: prep.Session, RunID: prep.RunID, Allowed: prep.Allowed, Gated: prep.Gated,
	}
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
		putBuffer(buf)
		return nil, err
	}
	return buf, nil
}

// putBuffer gives a buffer back to bufPool, unless it grew large.
func putBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		bufPool.Put(buf)
	}
}
