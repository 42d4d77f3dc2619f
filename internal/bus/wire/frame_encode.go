package wire

import (
	"github.com/agentfleet/agentfleet"
	"github.com/vmihailenco/msgpack/v5"
)

// The frames of every call are encoded by hand: field by field, without the
// reflection and the boxing that encoding by struct tags costs on each call.
// The output is the same map the tags describe (empty optional fields left
// out), so any MessagePack library reads it.

// mapWriter writes the entries of one map whose length is known up front.
type mapWriter struct {
	enc *msgpack.Encoder
	err error
}

func (w *mapWriter) str(k, v string) {
	if w.err == nil {
		if w.err = w.enc.EncodeString(k); w.err == nil {
			w.err = w.enc.EncodeString(v)
		}
	}
}

func (w *mapWriter) int(k string, v int64) {
	if w.err == nil {
		if w.err = w.enc.EncodeString(k); w.err == nil {
			w.err = w.enc.EncodeInt(v)
		}
	}
}

func (w *mapWriter) bool(k string, v bool) {
	if w.err == nil {
		if w.err = w.enc.EncodeString(k); w.err == nil {
			w.err = w.enc.EncodeBool(v)
		}
	}
}

func (w *mapWriter) value(k string, v any) {
	if w.err == nil {
		if w.err = w.enc.EncodeString(k); w.err == nil {
			w.err = w.enc.Encode(v)
		}
	}
}

func (w *mapWriter) object(k string, f func(*msgpack.Encoder) error) {
	if w.err == nil {
		if w.err = w.enc.EncodeString(k); w.err == nil {
			w.err = f(w.enc)
		}
	}
}

func count(flags ...bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (r *CallRequest) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 4 + count(r.TimeoutMS != 0, r.Attempt != 0, r.Agent != "", r.Session != "", r.RunID != "", len(r.Allowed) > 0, len(r.Gated) > 0)
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	w := &mapWriter{enc: enc}
	w.int("v", int64(r.V))
	w.str("id", r.ID)
	w.str("tool", r.Tool)
	w.object("args", func(enc *msgpack.Encoder) error {
		if r.Args == nil {
			return enc.EncodeMapLen(0)
		}
		return enc.EncodeMap(r.Args)
	})
	if r.TimeoutMS != 0 {
		w.int("timeout_ms", r.TimeoutMS)
	}
	if r.Attempt != 0 {
		w.int("attempt", int64(r.Attempt))
	}
	if r.Agent != "" {
		w.str("agent", r.Agent)
	}
	if r.Session != "" {
		w.str("session", r.Session)
	}
	if r.RunID != "" {
		w.str("run_id", r.RunID)
	}
	if len(r.Allowed) > 0 {
		w.value("allowed", r.Allowed)
	}
	if len(r.Gated) > 0 {
		w.value("gated", r.Gated)
	}
	return w.err
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (f *Frame) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 1 + count(f.ID != "", f.Worker != "", f.Cancel != "", f.HeartbeatMS != 0, f.InFlight != 0, f.Limit != 0,
		f.Partial != nil, f.Result != nil, f.IsError, f.Error != "", f.Code != "", f.Inbox != "")
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	w := &mapWriter{enc: enc}
	w.str("t", f.T)
	if f.ID != "" {
		w.str("id", f.ID)
	}
	if f.Worker != "" {
		w.str("worker", f.Worker)
	}
	if f.Cancel != "" {
		w.str("cancel", f.Cancel)
	}
	if f.HeartbeatMS != 0 {
		w.int("hb_ms", f.HeartbeatMS)
	}
	if f.InFlight != 0 {
		w.int("in_flight", int64(f.InFlight))
	}
	if f.Limit != 0 {
		w.int("limit", int64(f.Limit))
	}
	if f.Partial != nil {
		w.value("partial", f.Partial)
	}
	if f.Result != nil {
		w.object("result", func(enc *msgpack.Encoder) error { return encodeResult(enc, f.Result) })
	}
	if f.IsError {
		w.bool("is_error", true)
	}
	if f.Error != "" {
		w.str("error", f.Error)
	}
	if f.Code != "" {
		w.str("code", f.Code)
	}
	if f.Inbox != "" {
		w.str("inbox", f.Inbox)
	}
	return w.err
}

func encodeResult(enc *msgpack.Encoder, r *agentfleet.ToolResult) error {
	n := 1 + count(len(r.Details) > 0, r.Usage != nil, r.Terminate)
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	w := &mapWriter{enc: enc}
	w.object("content", func(enc *msgpack.Encoder) error {
		if err := enc.EncodeArrayLen(len(r.Content)); err != nil {
			return err
		}
		for i := range r.Content {
			if err := encodeContent(enc, &r.Content[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if len(r.Details) > 0 {
		w.object("details", func(enc *msgpack.Encoder) error { return enc.EncodeMap(r.Details) })
	}
	if u := r.Usage; u != nil {
		w.object("usage", func(enc *msgpack.Encoder) error {
			if err := enc.EncodeMapLen(3); err != nil {
				return err
			}
			uw := &mapWriter{enc: enc}
			uw.int("input_tokens", int64(u.InputTokens))
			uw.int("output_tokens", int64(u.OutputTokens))
			uw.int("total_tokens", int64(u.TotalTokens))
			return uw.err
		})
	}
	if r.Terminate {
		w.bool("terminate", true)
	}
	return w.err
}

func encodeContent(enc *msgpack.Encoder, c *agentfleet.Content) error {
	if len(c.Arguments) > 0 || len(c.ToolCalls) > 0 {
		return enc.Encode(c) // not a result block: the general path
	}
	n := 1 + count(c.Text != "", c.Data != "", c.MIMEType != "", c.ID != "", c.Name != "")
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	w := &mapWriter{enc: enc}
	w.str("type", c.Type)
	if c.Text != "" {
		w.str("text", c.Text)
	}
	if c.Data != "" {
		w.str("data", c.Data)
	}
	if c.MIMEType != "" {
		w.str("mime_type", c.MIMEType)
	}
	if c.ID != "" {
		w.str("id", c.ID)
	}
	if c.Name != "" {
		w.str("name", c.Name)
	}
	return w.err
}
