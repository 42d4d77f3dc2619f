package wire

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// Bombs: MessagePack that declares more than it holds. Each is a value to
// put where a message has an untyped value (args, partial, details), and
// the wrappers below place it in a call request, a frame and a cancel.
var bombValues = []struct {
	name  string
	value []byte
	want  string // in the error
}{
	{"array32", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, "array of 4294967295 elements in "},
	{"map32", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, "map of 4294967295 entries in "},
	{"str32", []byte{0xdb, 0xff, 0xff, 0xff, 0xff}, "string of 4294967295 bytes in "},
	{"bin32", []byte{0xc6, 0xff, 0xff, 0xff, 0xff}, "binary of 4294967295 bytes in "},
	{"ext32", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, "extension of 4294967295 bytes in "},
	{"array32 of 2^31", []byte{0xdd, 0x80, 0x00, 0x00, 0x00}, "array of 2147483648 elements in "},
	{"array16", []byte{0xdc, 0xff, 0xff, 0xc0}, "array of 65535 elements in 1 bytes"},
	{"map16 in map", []byte{0x81, 0xa1, 'k', 0xde, 0xff, 0xff}, "map of 65535 entries in 0 bytes"},
	{"str8 cut short", []byte{0xd9, 0x20, 'a'}, "string of 32 bytes in 1 bytes"},
	{"deep arrays", bytes.Repeat([]byte{0x91}, 10_000), "nests deeper than 32 levels"},
	{"deep maps", append(bytes.Repeat([]byte{0x81, 0xa0}, 5_000), 0xc0), "nests deeper than 32 levels"},
	{"length header cut short", []byte{0xdd, 0xff}, "is cut short"},
}

// str returns s as a MessagePack fixstr.
func str(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func bombRequest(v []byte) []byte {
	return cat([]byte{0x84}, str("v"), []byte{1}, str("id"), str("c"), str("tool"), str("echo"), str("args"), []byte{0x81}, str("a"), v)
}

func bombFrame(v []byte) []byte {
	return cat([]byte{0x83}, str("t"), str("progress"), str("id"), str("c"), str("partial"), v)
}

func bombResultFrame(v []byte) []byte {
	return cat([]byte{0x82}, str("t"), str("result"), str("result"), []byte{0x82}, str("content"), []byte{0x90}, str("details"), []byte{0x81}, str("d"), v)
}

func bombCancel(v []byte) []byte {
	return cat([]byte{0x84}, str("t"), str("cancel"), str("id"), str("c"), str("inbox"), str("_INBOX.x.1"), str("extra"), v)
}

// allocated returns the bytes f allocates on the heap. It measures a few
// times and keeps the least, so that an allocation of some other goroutine
// (a NATS connection of an earlier test winding down) is not counted.
func allocated(f func()) uint64 {
	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// bombBound is what decoding a message that fails early may allocate: 64
// bytes per byte of input and 4 KiB for the error and the structs, far below
// the budget of a message that decodes (DecodeBaseBytes more).
func bombBound(n int) uint64 { return uint64(DecodeBytesPerByte*n + 4<<10) }

// decodeBound is the most decoding any message may allocate: the budget,
// and 8 KiB for what is not charged to it (the error, size-class slack).
func decodeBound(n int) uint64 { return uint64(DecodeBytesPerByte*n + DecodeBaseBytes + 8<<10) }

// TestBombs runs every bomb through the real decoders, in each place it can
// sit: it must fail with an error naming the field and what is wrong, after
// allocating next to nothing.
func TestBombs(t *testing.T) {
	type decoder struct {
		name  string
		wrap  func([]byte) []byte
		field string
		dec   func([]byte) error
	}
	decoders := []decoder{
		{"request", bombRequest, `call request field "args.a`, func(b []byte) error { _, err := DecodeRequest(b); return err }},
		{"progress frame", bombFrame, `frame field "partial`, func(b []byte) error { _, err := DecodeFrame(b); return err }},
		{"result frame", bombResultFrame, `frame field "result.details.d`, func(b []byte) error { _, err := DecodeFrame(b); return err }},
		{"cancel", bombCancel, `cancel field "extra`, func(b []byte) error { _, err := DecodeCancel(b); return err }},
		{"frame as cancel", bombFrame, `cancel field "partial`, func(b []byte) error { _, err := DecodeCancel(b); return err }},
	}
	for _, d := range decoders {
		for _, b := range bombValues {
			t.Run(d.name+"/"+b.name, func(t *testing.T) {
				data := d.wrap(b.value)
				var err error
				n := allocated(func() { err = d.dec(data) })
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("err = %v, want a *DecodeError", err)
				}
				if msg := err.Error(); !strings.Contains(msg, b.want) || !strings.HasPrefix(msg, d.field) || !strings.Contains(msg, " at byte ") {
					t.Errorf("err = %q, want %q under %s…, with the byte", msg, b.want, d.field)
				}
				if de.Offset < 0 || de.Offset >= len(data) {
					t.Errorf("offset %d outside the %d-byte message", de.Offset, len(data))
				}
				if bound := bombBound(len(data)); n > bound {
					t.Errorf("decoding the %d-byte bomb allocated %d bytes, bound %d", len(data), n, bound)
				}
				// The error's path costs a few allocations per level it
				// names; the levels are bounded.
				if allocs, most := testing.AllocsPerRun(10, func() { _ = d.dec(data) }), float64(12+3*MaxDecodeDepth); allocs > most {
					t.Errorf("%v allocations, want at most %v", allocs, most)
				}
			})
		}
	}
}

// TestBombAsWholeMessage sends the bombs in place of the message itself.
func TestBombAsWholeMessage(t *testing.T) {
	wholes := [][]byte{
		{0xdf, 0xff, 0xff, 0xff, 0xff},
		{0xde, 0xff, 0xff},
		{0xdd, 0xff, 0xff, 0xff, 0xff},
		{0xdb, 0xff, 0xff, 0xff, 0xff},
		{},
		{0xc1},
	}
	for _, data := range wholes {
		for _, dec := range []func([]byte) error{
			func(b []byte) error { _, err := DecodeRequest(b); return err },
			func(b []byte) error { _, err := DecodeFrame(b); return err },
			func(b []byte) error { _, err := DecodeCancel(b); return err },
		} {
			var err error
			n := allocated(func() { err = dec(data) })
			if err == nil {
				t.Errorf("% x decoded", data)
			}
			if bound := bombBound(len(data)); n > bound {
				t.Errorf("% x: allocated %d bytes, bound %d", data, n, bound)
			}
		}
	}
}

// TestDecodeErrorSaysWhatAndWhere checks whole error texts.
func TestDecodeErrorSaysWhatAndWhere(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"array32 in partial", bombFrame([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}),
			`frame field "partial": array of 4294967295 elements in 0 bytes at byte 25`},
		{"deep in args", bombRequest(cat([]byte{0x81}, str("list"), []byte{0x92, 0xc0, 0x81}, str("x"), []byte{0xdb, 0, 0, 1, 0})),
			`call request field "args.a.list[1].x": string of 256 bytes in 0 bytes at byte 38`},
		{"not a map", []byte("hello"), `frame is not a MessagePack map: it starts with byte 0x68 at byte 0`},
		{"trailing bytes", cat(bombFrame([]byte{0xc0}), []byte{1, 2}), `frame has 2 bytes after its map at byte 26`},
		{"key not a string", []byte{0x81, 0x01, 0x01}, `frame has an integer as a map key, want a string at byte 1`},
		{"wrong type", cat([]byte{0x81}, str("t"), []byte{0x01}), `frame field "t": is an integer, want a string at byte 3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if bytes.Contains(tt.data, []byte("tool")) {
				_, err = DecodeRequest(tt.data)
			} else {
				_, err = DecodeFrame(tt.data)
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v\nwant  %s", err, tt.want)
			}
		})
	}
}

// TestDecodeBudget sends messages whose every length is honest but whose
// decoded form would take far more memory than the message: tens of
// thousands of one-entry maps (3 bytes each, 336 bytes each decoded). They
// are refused once the budget is spent, and decoding never allocates more
// than the bound.
func TestDecodeBudget(t *testing.T) {
	const maps = 30_000
	tiny := cat([]byte{0xdc, byte(maps >> 8), byte(maps & 0xff)}, bytes.Repeat([]byte{0x81, 0x00, 0xc0}, maps))
	for _, data := range [][]byte{bombRequest(tiny), bombFrame(tiny)} {
		var err error
		n := allocated(func() {
			if data[1] == 0xa1 && data[2] == 'v' {
				_, err = DecodeRequest(data)
			} else {
				_, err = DecodeFrame(data)
			}
		})
		if err == nil || !strings.Contains(err.Error(), "decoding would allocate more than") {
			t.Errorf("err = %v, want the budget spent", err)
		}
		if bound := decodeBound(len(data)); n > bound {
			t.Errorf("decoding %d bytes allocated %d bytes, bound %d", len(data), n, bound)
		}
		t.Logf("tiny maps in %d bytes: refused after %d bytes (bound %d)", len(data), n, decodeBound(len(data)))
	}

	// The same number of maps with real keys and values, as arguments
	// from JSON are, fit the budget.
	rec := cat([]byte{0x82}, str("id"), []byte{0x01}, str("name"), str("x"))
	honest := cat([]byte{0xdc, byte(maps >> 8), byte(maps & 0xff)}, bytes.Repeat(rec, maps))
	data := bombRequest(honest)
	var err error
	n := allocated(func() { _, err = DecodeRequest(data) })
	if err != nil {
		t.Errorf("records: %v", err)
	}
	if bound := decodeBound(len(data)); n > bound {
		t.Errorf("decoding %d bytes allocated %d bytes, bound %d", len(data), n, bound)
	}
	t.Logf("%d records in %d bytes: %d bytes decoded (%.1f per byte)", maps, len(data), n, float64(n)/float64(len(data)))
}

// TestDecodeKeepsTypes checks the untyped values the decoders build: the
// Go types vmihailenco/msgpack gave (tools convert from all of them), keys
// of any scalar type as strings, binaries as strings.
func TestDecodeKeepsTypes(t *testing.T) {
	v := cat([]byte{0x88},
		str("fix"), []byte{0x05},
		str("neg"), []byte{0xff},
		str("u16"), []byte{0xcd, 0x01, 0x00},
		str("i32"), []byte{0xd2, 0xff, 0xff, 0xff, 0x00},
		str("f32"), []byte{0xca, 0x3f, 0xc0, 0x00, 0x00},
		str("bin"), []byte{0xc4, 0x02, 'h', 'i'},
		[]byte{0x07}, str("int key"),
		str("arr"), []byte{0x92, 0xc3, 0xc0},
	)
	r, err := DecodeRequest(bombRequest(v))
	if err != nil {
		t.Fatal(err)
	}
	m := r.Args["a"].(map[string]any)
	checks := map[string]any{"fix": int8(5), "neg": int8(-1), "u16": uint16(256), "i32": int32(-256), "f32": float32(1.5), "bin": "hi", "7": "int key"}
	for k, want := range checks {
		if got := m[k]; got != want {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	if a, ok := m["arr"].([]any); !ok || len(a) != 2 || a[0] != true || a[1] != nil {
		t.Errorf("arr = %#v", m["arr"])
	}
}

// TestFrameCodeAndWorker reads what workers in other languages write: an
// integer code is taken as its decimal text, and a frame with a field of the
// wrong type is refused naming the field, while its worker can still be
// named.
func TestFrameCodeAndWorker(t *testing.T) {
	b, err := msgpack.Marshal(map[string]any{"t": "error", "id": "c1", "worker": "py/1", "error": "no such tool", "code": 404})
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeFrame(b)
	if err != nil || f.Code != "404" {
		t.Fatalf("integer code: %+v, %v; want code 404 as text", f, err)
	}
	b, _ = msgpack.Marshal(map[string]any{"t": "result", "id": "c1", "worker": "py/2", "result": map[string]any{"content": []any{}, "details": []any{1}}})
	if _, err := DecodeFrame(b); err == nil || !strings.Contains(err.Error(), `"result.details"`) {
		t.Errorf("wrong type: %v, want an error naming result.details", err)
	}
	if w := FrameWorker(b); w != "py/2" {
		t.Errorf("FrameWorker = %q, want py/2", w)
	}
}
