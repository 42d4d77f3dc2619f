package wire

import (
	"github.com/agentfleet/agentfleet"
	"github.com/vmihailenco/msgpack/v5"
)

// The field tables of the frames: each drives both the frame's encoder and
// its bounded decoder (field.go). The order of a table is the order in
// which the encoder writes the keys; the keys are those of the structs'
// msgpack tags (TestFieldTablesMatchTags), so any MessagePack library reads
// what these write.

var requestFields = []field[CallRequest]{
	integer("v", true, func(r *CallRequest) *int { return &r.V }),
	text("id", true, func(r *CallRequest) *string { return &r.ID }),
	text("tool", true, func(r *CallRequest) *string { return &r.Tool }),
	{
		key: "args",
		enc: func(enc *msgpack.Encoder, r *CallRequest) error {
			if r.Args == nil {
				return enc.EncodeMapLen(0)
			}
			return enc.EncodeMap(r.Args)
		},
		dec: func(rd *reader, r *CallRequest, depth int) (err *DecodeError) {
			r.Args, err = rd.anyMap(depth)
			return err
		},
	},
	integer("timeout_ms", false, func(r *CallRequest) *int64 { return &r.TimeoutMS }),
	integer("attempt", false, func(r *CallRequest) *int { return &r.Attempt }),
	text("agent", false, func(r *CallRequest) *string { return &r.Agent }),
	text("session", false, func(r *CallRequest) *string { return &r.Session }),
	text("run_id", false, func(r *CallRequest) *string { return &r.RunID }),
	texts("allowed", func(r *CallRequest) *[]string { return &r.Allowed }),
	texts("gated", func(r *CallRequest) *[]string { return &r.Gated }),
}

var frameFields = []field[Frame]{
	text("t", true, func(f *Frame) *string { return &f.T }),
	text("id", false, func(f *Frame) *string { return &f.ID }),
	text("worker", false, func(f *Frame) *string { return &f.Worker }),
	text("cancel", false, func(f *Frame) *string { return &f.Cancel }),
	integer("hb_ms", false, func(f *Frame) *int64 { return &f.HeartbeatMS }),
	integer("in_flight", false, func(f *Frame) *int { return &f.InFlight }),
	integer("limit", false, func(f *Frame) *int { return &f.Limit }),
	{
		key:  "partial",
		omit: func(f *Frame) bool { return f.Partial == nil },
		enc:  func(enc *msgpack.Encoder, f *Frame) error { return enc.Encode(f.Partial) },
		dec: func(r *reader, f *Frame, depth int) (err *DecodeError) {
			f.Partial, err = r.value(depth)
			return err
		},
	},
	{
		key:  "result",
		omit: func(f *Frame) bool { return f.Result == nil },
		enc:  func(enc *msgpack.Encoder, f *Frame) error { return encodeResult(enc, f.Result) },
		dec: func(r *reader, f *Frame, depth int) (err *DecodeError) {
			f.Result, err = r.result(depth)
			return err
		},
	},
	flag("is_error", func(f *Frame) *bool { return &f.IsError }),
	text("error", false, func(f *Frame) *string { return &f.Error }),
	{
		key:  "code",
		omit: func(f *Frame) bool { return f.Code == "" },
		enc:  func(enc *msgpack.Encoder, f *Frame) error { return enc.EncodeString(f.Code) },
		dec: func(r *reader, f *Frame, _ int) (err *DecodeError) {
			f.Code, err = r.code()
			return err
		},
	},
	text("inbox", false, func(f *Frame) *string { return &f.Inbox }),
}

var resultFields = []field[agentfleet.ToolResult]{
	{
		key: "content",
		enc: func(enc *msgpack.Encoder, res *agentfleet.ToolResult) error {
			if err := enc.EncodeArrayLen(len(res.Content)); err != nil {
				return err
			}
			for i := range res.Content {
				if err := encodeContent(enc, &res.Content[i]); err != nil {
					return err
				}
			}
			return nil
		},
		dec: func(r *reader, res *agentfleet.ToolResult, depth int) (err *DecodeError) {
			res.Content, err = r.contents(depth)
			return err
		},
	},
	{
		key:  "details",
		omit: func(res *agentfleet.ToolResult) bool { return len(res.Details) == 0 },
		enc:  func(enc *msgpack.Encoder, res *agentfleet.ToolResult) error { return enc.EncodeMap(res.Details) },
		dec: func(r *reader, res *agentfleet.ToolResult, depth int) (err *DecodeError) {
			res.Details, err = r.anyMap(depth)
			return err
		},
	},
	{
		key:  "usage",
		omit: func(res *agentfleet.ToolResult) bool { return res.Usage == nil },
		enc: func(enc *msgpack.Encoder, res *agentfleet.ToolResult) error {
			return encodeFields(enc, usageFields, res.Usage)
		},
		dec: func(r *reader, res *agentfleet.ToolResult, depth int) (err *DecodeError) {
			res.Usage, err = r.usage(depth)
			return err
		},
	},
	flag("terminate", func(res *agentfleet.ToolResult) *bool { return &res.Terminate }),
}

var usageFields = []field[agentfleet.Usage]{
	integer("input_tokens", true, func(u *agentfleet.Usage) *int { return &u.InputTokens }),
	integer("output_tokens", true, func(u *agentfleet.Usage) *int { return &u.OutputTokens }),
	integer("total_tokens", true, func(u *agentfleet.Usage) *int { return &u.TotalTokens }),
	integer("cached_input_tokens", false, func(u *agentfleet.Usage) *int { return &u.CachedInputTokens }),
	number("cost", func(u *agentfleet.Usage) *float64 { return &u.Cost }),
}

// contentFields are the fields of the content blocks of a result: only
// text, image and ref blocks are valid there (Content.Validate), so the fields
// of tool call blocks are not read.
var contentFields = []field[agentfleet.Content]{
	text("type", true, func(c *agentfleet.Content) *string { return &c.Type }),
	text("text", false, func(c *agentfleet.Content) *string { return &c.Text }),
	{
		key:  "data",
		omit: func(c *agentfleet.Content) bool { return c.Data == "" },
		enc:  func(enc *msgpack.Encoder, c *agentfleet.Content) error { return enc.EncodeString(c.Data) },
		dec: func(r *reader, c *agentfleet.Content, _ int) (err *DecodeError) {
			off := r.off
			if c.Data, err = r.str(); err == nil {
				// Validate decodes the base64 to check it.
				err = r.charge(off, len(c.Data))
			}
			return err
		},
	},
	text("mime_type", false, func(c *agentfleet.Content) *string { return &c.MIMEType }),
	text("id", false, func(c *agentfleet.Content) *string { return &c.ID }),
	text("name", false, func(c *agentfleet.Content) *string { return &c.Name }),
	text("$ref", false, func(c *agentfleet.Content) *string { return &c.Ref }),
	integer("size", false, func(c *agentfleet.Content) *int64 { return &c.Size }),
	text("sha256", false, func(c *agentfleet.Content) *string { return &c.SHA256 }),
}
