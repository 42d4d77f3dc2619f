package history

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/trace"
)

func batchHeader() nats.Header {
	h := nats.Header{}
	h.Set(HeaderRecord, RecordBatch)
	h.Set(HeaderWriter, "w1")
	return h
}

// testEntries are the records of a run of one tool call, as a writer
// encodes them.
func testEntries(t *testing.T) []entry {
	t.Helper()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled, Remote: true,
	})
	var es []entry
	for _, r := range []Record{
		{RunID: "r1", Message: agentfleet.NewUserMessage("hello"), Trace: sc},
		{RunID: "r1", Message: &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{{Type: agentfleet.ContentToolCall, ID: "c1", Name: "echo"}}}},
		{RunID: "r1", Message: &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: "c1", ToolName: "echo", Content: []agentfleet.Content{agentfleet.Text("hi")}}},
		{RunID: "r1", Final: &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("done")}}},
	} {
		e, _, err := encodeRecord(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return es
}

// TestEnvelopeRoundTrip encodes the records of a run into one envelope and
// decodes them as Load does: every record, in order, with its run, its
// place in the envelope, its writer and the user message's trace context.
func TestEnvelopeRoundTrip(t *testing.T) {
	es := testEntries(t)
	recs, skipped := Decode(9, batchHeader(), appendEnvelope(nil, es))
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	if got, want := len(recs), len(es); got != want {
		t.Fatalf("%d records, want %d", got, want)
	}
	for i, r := range recs {
		if r.Seq != 9 || r.Index != i || r.RunID != "r1" || r.Writer != "w1" {
			t.Errorf("record %d: seq %d index %d run %q writer %q, want 9 %d r1 w1", i, r.Seq, r.Index, r.RunID, r.Writer, i)
		}
	}
	if u, ok := recs[0].Message.(*agentfleet.UserMessage); !ok || agentfleet.JoinText(u.Content) != "hello" {
		t.Errorf("record 0 = %#v, want the user message", recs[0].Message)
	}
	if got := recs[0].Trace; got.TraceID() != es[0].trace.TraceID() || got.SpanID() != es[0].trace.SpanID() || !got.IsSampled() {
		t.Errorf("trace of the user message = %v, want %v", got, es[0].trace)
	}
	if recs[1].Trace.IsValid() {
		t.Errorf("the assistant message has trace %v, want none", recs[1].Trace)
	}
	if tr, ok := recs[2].Message.(*agentfleet.ToolResultMessage); !ok || tr.ToolCallID != "c1" {
		t.Errorf("record 2 = %#v, want the tool result", recs[2].Message)
	}
	if recs[3].Final == nil || agentfleet.JoinText(recs[3].Final.Content) != "done" {
		t.Errorf("record 3 = %+v, want the run end", recs[3])
	}
}

// TestHostileEnvelopes decodes envelopes that are cut short, lie about
// their lengths or count, have another version or are garbage: each is
// skipped with an error naming the stored message and what is wrong, and
// nothing is allocated from what it declares.
func TestHostileEnvelopes(t *testing.T) {
	good := appendEnvelope(nil, testEntries(t))
	uv := func(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }
	oneRecord := func(kind, run string, flag byte, payload string) []byte {
		b := appendBytes(nil, kind)
		b = appendBytes(b, run)
		b = append(b, flag)
		return appendBytes(b, payload)
	}
	two := func(rec []byte) []byte {
		b := uv([]byte{EnvelopeVersion}, 2)
		b = append(b, oneRecord("", "r1", 0, `{"role":"user","content":[]}`)...)
		return append(b, rec...)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "envelope is empty"},
		{"wrong version", append([]byte{7}, good[1:]...), "envelope version 7, want 1"},
		{"truncated", good[:len(good)-5], "exceeds the"},
		{"trailing bytes", append(append([]byte{}, good...), 0, 0), "bytes after its last record"},
		{"huge count", uv([]byte{EnvelopeVersion}, 1<<40), "declares 1099511627776 records"},
		{"count over the limit", append(uv([]byte{EnvelopeVersion}, MaxEnvelopeRecords+1), make([]byte, 4*(MaxEnvelopeRecords+1))...), "declares 257 records"},
		{"count of one", append(uv([]byte{EnvelopeVersion}, 1), oneRecord("", "r1", 0, "{}")...), "declares 1 records"},
		{"count above the bytes", append(uv([]byte{EnvelopeVersion}, 50), oneRecord("", "r1", 0, "{}")...), "declares 50 records"},
		{"bad varint", []byte{EnvelopeVersion, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "record count at offset 1: not a varint"},
		{"huge payload length", two(append(oneRecord("", "r2", 0, "")[:len(oneRecord("", "r2", 0, ""))-1], uv(nil, 1<<50)...)), "payload at offset"},
		{"kind too long", two(oneRecord(strings.Repeat("k", 40), "r2", 0, "{}")), "exceeds the limit of 32"},
		{"empty run id", two(oneRecord("", "", 0, "{}")), "run id at offset"},
		{"bad trace flag", two(oneRecord("", "r2", 9, "{}")), "trace flag at offset"},
		{"short trace", two(append(appendBytes(appendBytes(nil, ""), "r2"), 1, 1, 2)), "want 25"},
		{"nested envelope", two(oneRecord(RecordBatch, "r2", 0, "{}")), "an envelope inside an envelope"},
		{"garbage", []byte("{\"role\":\"user\"}"), "envelope version 123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, skipped := Decode(42, batchHeader(), tc.data)
			if len(recs) != 0 || len(skipped) != 1 {
				t.Fatalf("%d records and %d skipped, want the envelope skipped: %v", len(recs), len(skipped), skipped)
			}
			sk := skipped[0]
			if sk.Seq != 42 || sk.Index != -1 {
				t.Errorf("skipped seq %d index %d, want 42 -1", sk.Seq, sk.Index)
			}
			if msg := sk.Err.Error(); !strings.Contains(msg, "history record 42") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to name record 42 and say %q", msg, tc.want)
			}
		})
	}
}

// TestEnvelopeWithABadRecord holds one record that does not decode: it
// alone is skipped, named by its place, and the others load.
func TestEnvelopeWithABadRecord(t *testing.T) {
	es := testEntries(t)
	es[1].data = []byte(`{"role":`)
	recs, skipped := Decode(5, batchHeader(), appendEnvelope(nil, es))
	if len(recs) != len(es)-1 || len(skipped) != 1 {
		t.Fatalf("%d records and %d skipped, want %d and 1", len(recs), len(skipped), len(es)-1)
	}
	if sk := skipped[0]; sk.Index != 1 || !strings.Contains(sk.Err.Error(), "history record 5 (entry 1 of 4 of its envelope)") {
		t.Errorf("skipped %+v, want entry 1 of record 5", sk)
	}
	if recs[1].Index != 2 {
		t.Errorf("the record after the bad one has index %d, want 2", recs[1].Index)
	}
}
