package wire

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/vmihailenco/msgpack/v5"
)

func TestFrameRoundTrip(t *testing.T) {
	frames := []*Frame{
		{T: FrameAck, ID: "c1", Worker: "w/1", Cancel: "agent.worker.1.cancel", HeartbeatMS: 1000},
		{T: FrameBusy, ID: "c1", Worker: "w/1", InFlight: 64, Limit: 64},
		{T: FrameProgress, ID: "c1", Partial: map[string]any{"elapsed_ms": int8(100)}},
		{T: FrameHeartbeat, ID: "c1"},
		{T: FrameResult, ID: "c1", Worker: "w/1", Result: &agentfleet.ToolResult{
			Content: []agentfleet.Content{agentfleet.Text("ok")}, Details: map[string]any{"n": int8(1)}, Terminate: true,
			Usage: &agentfleet.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, CachedInputTokens: 1, Cost: 1.5e-6}}},
		{T: FrameError, ID: "c1", Error: "Tool x not served", Code: CodeNotFound},
		{T: FrameCancel, ID: "c1"},
	}
	for _, f := range frames {
		b, err := EncodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeFrame(b)
		if err != nil {
			t.Fatalf("%s: %v", f.T, err)
		}
		if !reflect.DeepEqual(got, f) {
			t.Errorf("%s: round trip = %+v, want %+v", f.T, got, f)
		}
	}
}

func TestRequestRoundTripCompactNumbers(t *testing.T) {
	r := &CallRequest{V: 1, ID: "c", Tool: "sleep", Args: map[string]any{"ms": 250.0, "ratio": 0.5, "nested": map[string]any{"k": []any{1.0, "x"}}}, TimeoutMS: 1000}
	b, err := EncodeRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	// An integral float from JSON crosses as an integer; a fraction stays a float.
	if _, ok := got.Args["ms"].(float64); ok {
		t.Errorf("ms decoded as float64, want an integer type")
	}
	if got.Args["ratio"] != 0.5 {
		t.Errorf("ratio = %v", got.Args["ratio"])
	}
}

func TestDecodeErrors(t *testing.T) {
	enc := func(v any) []byte { b, _ := msgpack.Marshal(v); return b }
	tests := []struct {
		name string
		data []byte
		req  bool
		want string
	}{
		{"garbage frame", []byte{0xc1, 0x00}, false, "frame is not a MessagePack map"},
		{"no type", enc(map[string]any{"id": "x"}), false, "frame has no type"},
		{"unknown type", enc(map[string]any{"t": "zap"}), false, `frame type "zap" is unknown`},
		{"result without result", enc(map[string]any{"t": "result"}), false, "result frame has no result"},
		{"bad content", enc(map[string]any{"t": "result", "result": map[string]any{"content": []any{map[string]any{"type": "video"}}}}), false, "content block 0"},
		{"negative cost", enc(map[string]any{"t": "result", "result": map[string]any{"usage": map[string]any{"cost": -1.5}}}), false, "number -1.5 is negative"},
		{"cost not a number", enc(map[string]any{"t": "result", "result": map[string]any{"usage": map[string]any{"cost": math.NaN()}}}), false, "is not finite"},
		{"cost a string", enc(map[string]any{"t": "result", "result": map[string]any{"usage": map[string]any{"cost": "1"}}}), false, "want a number"},
		{"garbage request", []byte("hello"), true, "call request is not a MessagePack map"},
		{"no id", enc(map[string]any{"tool": "x"}), true, "call request has no id"},
		{"no tool", enc(map[string]any{"id": "c"}), true, "call request c has no tool name"},
		{"future version", enc(map[string]any{"v": 9, "id": "c", "tool": "x"}), true, "protocol version 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.req {
				_, err = DecodeRequest(tt.data)
			} else {
				_, err = DecodeFrame(tt.data)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNonStringKeysBecomeStrings(t *testing.T) {
	b, _ := msgpack.Marshal(map[string]any{"t": "progress", "partial": map[any]any{1: "one", "two": []any{map[any]any{true: 1}}}})
	f, err := DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"1": "one", "two": []any{map[string]any{"true": int8(1)}}}
	if !reflect.DeepEqual(f.Partial, want) {
		t.Errorf("partial = %#v, want %#v", f.Partial, want)
	}
}

// TestHandEncodingMatchesTags checks that the hand-written encoders write
// what the struct tags describe: the same map, field for field.
func TestHandEncodingMatchesTags(t *testing.T) {
	type plainFrame Frame
	type plainRequest CallRequest
	asJSON := func(b []byte) string {
		var v any
		dec := msgpack.NewDecoder(bytes.NewReader(b))
		dec.SetMapDecoder(decodeMap)
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(j)
	}
	frames := []*Frame{
		{T: FrameAck, ID: "c1", Worker: "w/1", Cancel: "agent.worker.1.cancel", HeartbeatMS: 1000},
		{T: FrameBusy, ID: "c1", Worker: "w/1", InFlight: 64, Limit: 64},
		{T: FrameProgress, ID: "c1", Partial: map[string]any{"elapsed_ms": 100, "nested": []any{"a", 1.5}}},
		{T: FrameResult, ID: "c1", Worker: "w", IsError: true, Result: &agentfleet.ToolResult{
			Content: []agentfleet.Content{agentfleet.Text("ok"), agentfleet.Image("aGk=", "image/png")},
			Details: map[string]any{"n": 1}, Terminate: true, Usage: &agentfleet.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, CachedInputTokens: 1, Cost: 0.25}}},
		{T: FrameResult, Result: &agentfleet.ToolResult{Content: []agentfleet.Content{}}},
		{T: FrameError, ID: "c1", Error: "nope", Code: CodeNotFound},
		{T: FrameCancel, ID: "c1", Inbox: "_INBOX.x.1"},
	}
	for _, f := range frames {
		hand, err := msgpack.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		tags, err := msgpack.Marshal((*plainFrame)(f))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := asJSON(hand), asJSON(tags); got != want {
			t.Errorf("%s frame:\nhand %s\ntags %s", f.T, got, want)
		}
	}
	r := &CallRequest{V: 1, ID: "c", Tool: "t", Args: map[string]any{"a": "b"}, TimeoutMS: 5, Attempt: 2, Agent: "ag", Session: "s", RunID: "r", Allowed: []string{"x", "y"}, Gated: []string{"z"}}
	for _, req := range []*CallRequest{r, {V: 1, ID: "c", Tool: "t"}} {
		hand, _ := msgpack.Marshal(req)
		tags, _ := msgpack.Marshal((*plainRequest)(req))
		if got, want := asJSON(hand), asJSON(tags); got != want && !(req.Args == nil && strings.Replace(want, `"args":null`, `"args":{}`, 1) == got) {
			t.Errorf("request:\nhand %s\ntags %s", got, want)
		}
	}
}

func TestHeartbeatWindow(t *testing.T) {
	tests := []struct {
		hbMS   int64
		misses int
		want   time.Duration
		ok     bool
	}{
		{1000, 3, 3 * time.Second, true},
		{0, 3, 0, false},
		{-5, 3, 0, false},
		{1, 3, 3 * MinHeartbeat, true},
		{math.MaxInt64, 3, 3 * MaxHeartbeat, true},
		{math.MaxInt64 / 1000, 3, 3 * MaxHeartbeat, true},
		{1000, math.MaxInt, 1000 * time.Second, true},
		{1000, 0, time.Second, true},
	}
	for _, tt := range tests {
		got, ok := HeartbeatWindow(tt.hbMS, tt.misses)
		if got != tt.want || ok != tt.ok {
			t.Errorf("HeartbeatWindow(%d, %d) = %v, %v; want %v, %v", tt.hbMS, tt.misses, got, ok, tt.want, tt.ok)
		}
	}
}

// TestRefBlockRoundTrip: a result's ref block crosses the wire whole, and
// a malformed one is refused with the field at fault.
func TestRefBlockRoundTrip(t *testing.T) {
	ref := agentfleet.RefBlock("obj://agentfleet_objects/default/s/x", 20<<20, strings.Repeat("ab", 32), "text/csv", "export.csv")
	buf, err := EncodeFrameBuf(&Frame{T: FrameResult, ID: "c1", Result: &agentfleet.ToolResult{Content: []agentfleet.Content{ref}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeFrame(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Result.Content[0]; !reflect.DeepEqual(got, ref) {
		t.Errorf("decoded %+v, want %+v", got, ref)
	}
	bad := ref
	bad.SHA256 = "xyz"
	buf, _ = EncodeFrameBuf(&Frame{T: FrameResult, ID: "c1", Result: &agentfleet.ToolResult{Content: []agentfleet.Content{bad}}})
	if _, err := DecodeFrame(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "ref block: sha256") {
		t.Errorf("bad sha256: err = %v", err)
	}
}
