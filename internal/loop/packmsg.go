package loop

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/agentfleet/agentfleet"
)

// The packed form of a message is its fields in a fixed order, each a
// uvarint length and bytes, a varint or a byte, with nothing that the frame
// around it says already (packed.go): no role unless unusual (the frame's
// kind says it), no run id on an assistant message of the frame's run, and
// a UTC timestamp as Unix nanoseconds; arguments byte for byte. Details and raw tool_calls entries,
// rare, are kept as their JSON, so they decode as they would from the
// history store (numbers as float64). Every field of the message types is
// here: TestPackedMessagesRoundTrip fails for one that is not.
//
// A slice or map keeps whether it was nil: its count or length is written
// plus one, and 0 means nil.

// packWriter appends a packed message to b.
type packWriter struct {
	b   []byte
	err error
}

func (w *packWriter) str(s string) {
	w.b = binary.AppendUvarint(w.b, uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *packWriter) optBytes(p []byte) {
	if p == nil {
		w.b = append(w.b, 0)
		return
	}
	w.b = binary.AppendUvarint(w.b, uint64(len(p))+1)
	w.b = append(w.b, p...)
}

func (w *packWriter) flag(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

// jsonOf writes v's JSON, or nil for a nil v.
func (w *packWriter) jsonOf(v any, isNil bool) {
	if isNil {
		w.optBytes(nil)
		return
	}
	data, err := json.Marshal(v)
	if err != nil && w.err == nil {
		w.err = err
	}
	w.optBytes(data)
}

func (w *packWriter) time(t time.Time) {
	switch {
	case t.IsZero():
		w.b = append(w.b, 0)
	case t.Location() == time.UTC && t.Equal(time.Unix(0, t.UnixNano())):
		w.b = append(w.b, 1)
		w.b = binary.AppendVarint(w.b, t.UnixNano())
	default:
		data, err := t.MarshalBinary()
		if err != nil && w.err == nil {
			w.err = err
		}
		w.b = append(w.b, 2)
		w.optBytes(data)
	}
}

func (w *packWriter) usage(u *agentfleet.Usage) {
	if u == nil {
		w.b = append(w.b, 0)
		return
	}
	w.b = append(w.b, 1)
	w.b = binary.AppendVarint(w.b, int64(u.InputTokens))
	w.b = binary.AppendVarint(w.b, int64(u.OutputTokens))
	w.b = binary.AppendVarint(w.b, int64(u.TotalTokens))
	w.b = binary.AppendVarint(w.b, int64(u.CachedInputTokens))
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(u.Cost))
}

func (w *packWriter) contents(cs []agentfleet.Content) {
	if cs == nil {
		w.b = append(w.b, 0)
		return
	}
	w.b = binary.AppendUvarint(w.b, uint64(len(cs))+1)
	for i := range cs {
		c := &cs[i]
		w.str(c.Type)
		w.str(c.Text)
		w.str(c.Data)
		w.str(c.MIMEType)
		w.str(c.ID)
		w.str(c.Name)
		w.optBytes(c.Arguments)
		w.jsonOf(c.ToolCalls, c.ToolCalls == nil)
	}
}

// appendPackedMessage appends the packed form of m, of run runID, to b. It
// fails for Details or tool_calls entries that have no JSON encoding.
func appendPackedMessage(b []byte, runID string, m agentfleet.Message) ([]byte, error) {
	w := &packWriter{b: b}
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		w.str(unless(m.Role, agentfleet.RoleUser))
		w.contents(m.Content)
		w.str(m.ID)
		w.time(m.Timestamp)
		// The parent of a child's run, rare: its JSON.
		w.jsonOf(m.Parent, m.Parent == nil)
		w.str(m.Priority)
	case *agentfleet.AssistantMessage:
		w.str(unless(m.Role, agentfleet.RoleAssistant))
		w.contents(m.Content)
		w.str(m.API)
		w.str(m.Provider)
		w.str(m.Model)
		w.usage(m.Usage)
		w.str(string(m.StopReason))
		w.str(m.ErrorMessage)
		w.str(unless(m.RunID, runID))
		w.time(m.Timestamp)
	case *agentfleet.ToolResultMessage:
		w.str(unless(m.Role, agentfleet.RoleTool))
		w.str(m.ToolCallID)
		w.str(m.ToolName)
		w.contents(m.Content)
		w.jsonOf(m.Details, m.Details == nil)
		w.usage(m.Usage)
		if m.AddedToolNames == nil {
			w.b = append(w.b, 0)
		} else {
			w.b = binary.AppendUvarint(w.b, uint64(len(m.AddedToolNames))+1)
			for _, n := range m.AddedToolNames {
				w.str(n)
			}
		}
		w.flag(m.IsError)
		w.flag(m.Terminate)
		w.time(m.Timestamp)
	default:
		return nil, errUnknownKind
	}
	return w.b, w.err
}

// packReader reads a packed message; its first failure names the field and
// the offset, and every read after it returns zero values.
type packReader struct {
	b   []byte
	off int
	err error
}

var errShort = errors.New("runs past the end")

func (r *packReader) fail(field string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at offset %d: %w", field, r.off, err)
	}
}

func (r *packReader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b[r.off:])
	if k <= 0 {
		r.fail(field, errShort)
		return 0
	}
	r.off += k
	return v
}

func (r *packReader) varint(field string) int64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Varint(r.b[r.off:])
	if k <= 0 {
		r.fail(field, errShort)
		return 0
	}
	r.off += k
	return v
}

func (r *packReader) byte(field string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(field, errShort)
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

// uint64le reads 8 bytes, little-endian.
func (r *packReader) uint64le(field string) uint64 {
	p := r.take(field, 8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

// take returns the next n bytes, without a copy.
func (r *packReader) take(field string, n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.fail(field, errShort)
		return nil
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *packReader) str(field string) string {
	return string(r.take(field, r.uvarint(field)))
}

// count reads a count written plus one; nil reports a nil slice.
func (r *packReader) count(field string) (n int, isNil bool) {
	v := r.uvarint(field)
	if v == 0 || r.err != nil {
		return 0, true
	}
	if v-1 > uint64(len(r.b)-r.off) { // every element takes a byte at least
		r.fail(field, errShort)
		return 0, true
	}
	return int(v - 1), false
}

func (r *packReader) optBytes(field string) []byte {
	n, isNil := r.count(field)
	if isNil {
		return nil
	}
	return append([]byte{}, r.take(field, uint64(n))...)
}

func (r *packReader) jsonInto(field string, v any) bool {
	n, isNil := r.count(field)
	if isNil {
		return false
	}
	if err := json.Unmarshal(r.take(field, uint64(n)), v); err != nil {
		r.fail(field, err)
	}
	return true
}

func (r *packReader) flag(field string) bool { return r.byte(field) != 0 }

func (r *packReader) time(field string) time.Time {
	switch r.byte(field) {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, r.varint(field)).UTC()
	case 2:
		var t time.Time
		if err := t.UnmarshalBinary(r.optBytes(field)); err != nil {
			r.fail(field, err)
		}
		return t
	}
	r.fail(field, errors.New("not a kind of time"))
	return time.Time{}
}

func (r *packReader) usage(field string) *agentfleet.Usage {
	if r.byte(field) == 0 {
		return nil
	}
	u := &agentfleet.Usage{InputTokens: int(r.varint(field)), OutputTokens: int(r.varint(field)), TotalTokens: int(r.varint(field)),
		CachedInputTokens: int(r.varint(field))}
	u.Cost = math.Float64frombits(r.uint64le(field))
	return u
}

func (r *packReader) contents() []agentfleet.Content {
	n, isNil := r.count("content")
	if isNil {
		return nil
	}
	out := make([]agentfleet.Content, n)
	for i := range out {
		c := &out[i]
		c.Type, c.Text, c.Data, c.MIMEType = r.str("content type"), r.str("content text"), r.str("content data"), r.str("content mime type")
		c.ID, c.Name = r.str("content id"), r.str("content name")
		c.Arguments = r.optBytes("content arguments")
		r.jsonInto("content tool_calls", &c.ToolCalls)
	}
	return out
}

// unpackMessage decodes the packed form data of a message of kind, of run
// runID.
func unpackMessage(kind byte, runID string, data []byte) (agentfleet.Message, error) {
	r := &packReader{b: data}
	var m agentfleet.Message
	switch kind {
	case packUser:
		u := &agentfleet.UserMessage{Role: or(r.str("role"), agentfleet.RoleUser)}
		u.Content = r.contents()
		u.ID = r.str("id")
		u.Timestamp = r.time("timestamp")
		var p agentfleet.Parent
		if r.jsonInto("parent", &p) {
			u.Parent = &p
		}
		u.Priority = r.str("priority")
		m = u
	case packAssistant:
		a := &agentfleet.AssistantMessage{Role: or(r.str("role"), agentfleet.RoleAssistant)}
		a.Content = r.contents()
		a.API, a.Provider, a.Model = r.str("api"), r.str("provider"), r.str("model")
		a.Usage = r.usage("usage")
		a.StopReason = agentfleet.StopReason(r.str("stop reason"))
		a.ErrorMessage = r.str("error message")
		a.RunID = or(r.str("run id"), runID)
		a.Timestamp = r.time("timestamp")
		m = a
	case packTool:
		t := &agentfleet.ToolResultMessage{Role: or(r.str("role"), agentfleet.RoleTool)}
		t.ToolCallID, t.ToolName = r.str("tool call id"), r.str("tool name")
		t.Content = r.contents()
		r.jsonInto("details", &t.Details)
		t.Usage = r.usage("usage")
		if n, isNil := r.count("added tool names"); !isNil {
			t.AddedToolNames = make([]string, n)
			for i := range t.AddedToolNames {
				t.AddedToolNames[i] = r.str("added tool name")
			}
		}
		t.IsError, t.Terminate = r.flag("is_error"), r.flag("terminate")
		t.Timestamp = r.time("timestamp")
		m = t
	default:
		return nil, errUnknownKind
	}
	if r.err == nil && r.off != len(data) {
		r.fail("end", errors.New("bytes follow the message"))
	}
	if r.err != nil {
		return nil, r.err
	}
	return m, nil
}

// unless is s, or "" when s is the usual value; or undoes it. An empty s
// is kept as "-", and a "-" that begins s gets another.
func unless(s, usual string) string {
	switch {
	case s == usual:
		return ""
	case s == "" || s[0] == '-':
		return "-" + s
	}
	return s
}

func or(s, usual string) string {
	switch {
	case s == "":
		return usual
	case s[0] == '-':
		return s[1:]
	}
	return s
}
