package wire

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"sync"
)

// Every byte of a tool message that crosses the wire (call requests, frames,
// cancels) is decoded by a bounded reader instead of a general MessagePack
// library. A library sizes a slice or a map from the length a header
// declares before it has read a byte of the contents, so that five bytes
// declaring an array of 2^32-1 elements ask for tens of gigabytes. The
// reader checks every declared length against the bytes that remain,
// bounds the nesting, and charges what it allocates to a budget set by the
// size of the message, before allocating it.

// MaxDecodeDepth bounds the nesting of maps and arrays in a wire message,
// counting the message's own map as one level. Deeper messages are refused:
// no tool has a use for them, and a bound keeps the recursion of the
// decoder (and of whoever walks the decoded value later) shallow.
const MaxDecodeDepth = 32

// DecodeBytesPerByte and DecodeBaseBytes bound what decoding one wire
// message may allocate: DecodeBytesPerByte bytes per byte of the message
// plus DecodeBaseBytes. A message whose decoded form would take more (only a
// message made mostly of tiny maps comes near: an empty or one-entry Go map
// takes 48 or 336 bytes) is refused with an error, before the allocation.
const (
	DecodeBytesPerByte = 64
	DecodeBaseBytes    = 64 << 10
)

// reader decodes one wire message. Every method checks what it reads
// against the bytes that remain and fails with a *DecodeError.
type reader struct {
	b      []byte
	off    int
	msg    string // names the message in errors
	budget int    // bytes the decoded values may still take
	// s is a copy of b made at the first string, which every decoded
	// string is a slice of: one allocation for all the strings of a
	// message instead of one each. They keep the copy alive together, which
	// costs at most the size of the message.
	s string
}

func newReader(data []byte, msg string) reader {
	return reader{b: data, msg: msg, budget: DecodeBytesPerByte*len(data) + DecodeBaseBytes}
}

// The field tables call their decoders through function values, through
// which a reader escapes to the heap; the decoders of whole messages take
// theirs from a pool instead of allocating one per message.
var readerPool = sync.Pool{New: func() any { return new(reader) }}

func getReader(data []byte, msg string) *reader {
	r := readerPool.Get().(*reader)
	*r = newReader(data, msg)
	return r
}

// putReader returns r to the pool, holding nothing of its message.
func putReader(r *reader) {
	*r = reader{}
	readerPool.Put(r)
}

// text returns the contents of the str or bin head h as a string.
func (r *reader) text(h head) (string, *DecodeError) {
	if h.n == 0 {
		return "", nil
	}
	if r.s == "" {
		if err := r.charge(h.off, stringCost(len(r.b))); err != nil {
			return "", err
		}
		r.s = string(r.b)
	}
	s := r.s[r.off : r.off+h.n]
	r.off += h.n
	return s, nil
}

func (r *reader) left() int { return len(r.b) - r.off }

func (r *reader) errAt(off int, format string, args ...any) *DecodeError {
	return &DecodeError{Message: r.msg, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// charge takes n bytes from the budget, or fails if there are not so many
// left. Called before the allocation it pays for.
func (r *reader) charge(off, n int) *DecodeError {
	if n > r.budget {
		return r.errAt(off, "decoding would allocate more than %d bytes (%d per byte of the %d-byte message, plus %d)",
			DecodeBytesPerByte*len(r.b)+DecodeBaseBytes, DecodeBytesPerByte, len(r.b), DecodeBaseBytes)
	}
	r.budget -= n
	return nil
}

// MessagePack type families, as the head of a value announces them.
type kind uint8

const (
	kindNil kind = iota
	kindBool
	kindInt   // signed: fixint, negative fixint, int 8..64
	kindUint  // uint 8..64
	kindFloat // float 32 or 64
	kindStr
	kindBin
	kindArray
	kindMap
	kindExt
)

var kindNames = [...]string{"nil", "boolean", "integer", "integer", "float", "string", "binary", "array", "map", "extension"}

func (k kind) String() string { return kindNames[k] }

// a returns the kind's name with its article, for errors.
func (k kind) a() string {
	switch k {
	case kindNil:
		return "nil"
	case kindInt, kindUint, kindArray, kindExt:
		return "an " + k.String()
	}
	return "a " + k.String()
}

// head is the start of one value: its kind, and, by kind, its scalar value
// (bool, int, uint, float bits, float32 flag in ext) or its declared length
// (str, bin, array, map, ext) with the offset of its contents.
type head struct {
	kind   kind
	off    int // offset of the value's first byte
	n      int // length of str/bin/ext contents, elements of array, entries of map
	i      int64
	u      uint64
	f      float64
	f32    bool // the float was a float 32
	ext    int8 // extension type
	isTrue bool
}

// uintN reads an n-byte big-endian unsigned integer.
func (r *reader) uintN(start, n int) (uint64, *DecodeError) {
	if r.left() < n {
		return 0, r.errAt(start, "is cut short: %d-byte header needs %d more bytes, %d left", n+1, n, r.left())
	}
	var v uint64
	switch n {
	case 1:
		v = uint64(r.b[r.off])
	case 2:
		v = uint64(binary.BigEndian.Uint16(r.b[r.off:]))
	case 4:
		v = uint64(binary.BigEndian.Uint32(r.b[r.off:]))
	case 8:
		v = binary.BigEndian.Uint64(r.b[r.off:])
	}
	r.off += n
	return v, nil
}

// next reads the head of the next value. A declared length is checked
// against the bytes that remain here, so that no caller ever sizes
// anything from a length the message cannot hold: an array needs at least
// one byte per element, a map two per entry.
func (r *reader) next() (h head, err *DecodeError) {
	h.off = r.off
	if r.left() == 0 {
		return h, r.errAt(r.off, "is cut short: a value was expected, the message ended")
	}
	c := r.b[r.off]
	r.off++
	var lenBytes int // bytes of the length that follows c, for str/bin/array/map/ext
	switch {
	case c <= 0x7f:
		h.kind, h.i = kindInt, int64(int8(c))
		return h, nil
	case c >= 0xe0:
		h.kind, h.i = kindInt, int64(int8(c))
		return h, nil
	case c&0xf0 == 0x80:
		h.kind, h.n = kindMap, int(c&0x0f)
	case c&0xf0 == 0x90:
		h.kind, h.n = kindArray, int(c&0x0f)
	case c&0xe0 == 0xa0:
		h.kind, h.n = kindStr, int(c&0x1f)
	default:
		switch c {
		case 0xc0:
			h.kind = kindNil
			return h, nil
		case 0xc2, 0xc3:
			h.kind, h.isTrue = kindBool, c == 0xc3
			return h, nil
		case 0xc4, 0xc5, 0xc6:
			h.kind, lenBytes = kindBin, 1<<(c-0xc4)
		case 0xc7, 0xc8, 0xc9:
			h.kind, lenBytes = kindExt, 1<<(c-0xc7)
		case 0xca, 0xcb:
			n := 4 << (c - 0xca)
			v, err := r.uintN(h.off, n)
			if err != nil {
				return h, err
			}
			h.kind = kindFloat
			if n == 4 {
				h.f, h.f32 = float64(math.Float32frombits(uint32(v))), true
			} else {
				h.f = math.Float64frombits(v)
			}
			return h, nil
		case 0xcc, 0xcd, 0xce, 0xcf:
			v, err := r.uintN(h.off, 1<<(c-0xcc))
			if err != nil {
				return h, err
			}
			h.kind, h.u = kindUint, v
			return h, nil
		case 0xd0, 0xd1, 0xd2, 0xd3:
			n := 1 << (c - 0xd0)
			v, err := r.uintN(h.off, n)
			if err != nil {
				return h, err
			}
			h.kind = kindInt
			switch n { // sign-extend
			case 1:
				h.i = int64(int8(v))
			case 2:
				h.i = int64(int16(v))
			case 4:
				h.i = int64(int32(v))
			default:
				h.i = int64(v)
			}
			return h, nil
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
			h.kind, h.n = kindExt, 1<<(c-0xd4)
		case 0xd9, 0xda, 0xdb:
			h.kind, lenBytes = kindStr, 1<<(c-0xd9)
		case 0xdc, 0xdd:
			h.kind, lenBytes = kindArray, 2<<(c-0xdc)
		case 0xde, 0xdf:
			h.kind, lenBytes = kindMap, 2<<(c-0xde)
		default: // 0xc1
			return h, r.errAt(h.off, "has byte 0x%02x, which is no MessagePack type", c)
		}
	}
	if lenBytes > 0 {
		v, err := r.uintN(h.off, lenBytes)
		if err != nil {
			return h, err
		}
		if v > math.MaxInt32 { // also keeps the arithmetic below from overflowing
			return h, r.errAt(h.off, "%s of %d %s in %d bytes", h.kind, v, h.unit(), r.left())
		}
		h.n = int(v)
	}
	if h.kind == kindExt {
		if r.left() < 1 {
			return h, r.errAt(h.off, "is cut short: extension without its type")
		}
		h.ext = int8(r.b[r.off])
		r.off++
	}
	need := h.n
	if h.kind == kindMap {
		need = 2 * h.n
	}
	if need > r.left() {
		return h, r.errAt(h.off, "%s of %d %s in %d bytes", h.kind, h.n, h.unit(), r.left())
	}
	return h, nil
}

func (h *head) unit() string {
	switch h.kind {
	case kindArray:
		return "elements"
	case kindMap:
		return "entries"
	}
	return "bytes"
}

// bytes returns the n bytes of contents of a str, bin or ext head (whose
// length next has checked), without copying.
func (r *reader) bytes(h head) []byte {
	b := r.b[r.off : r.off+h.n]
	r.off += h.n
	return b
}

// str reads a string: str, bin (which other MessagePack libraries write for
// byte strings) or nil, which is "".
func (r *reader) str() (string, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return "", err
	}
	switch h.kind {
	case kindNil:
		return "", nil
	case kindStr, kindBin:
		return r.text(h)
	}
	return "", r.errAt(h.off, "is %s, want a string", h.kind.a())
}

// code reads an error code: a string, or an integer (which is unambiguous,
// and which workers in other languages write), given as its decimal text.
func (r *reader) code() (string, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return "", err
	}
	switch h.kind {
	case kindNil:
		return "", nil
	case kindStr, kindBin:
		return r.text(h)
	case kindInt:
		return strconv.FormatInt(h.i, 10), nil
	case kindUint:
		return strconv.FormatUint(h.u, 10), nil
	}
	return "", r.errAt(h.off, "is %s, want a string or an integer", h.kind.a())
}

// int reads an integer that fits an int64; nil is 0, and an integral float
// (which some libraries write for whole numbers) is taken as its value.
func (r *reader) int() (int64, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return 0, err
	}
	switch h.kind {
	case kindNil:
		return 0, nil
	case kindInt:
		return h.i, nil
	case kindUint:
		if h.u > math.MaxInt64 {
			return 0, r.errAt(h.off, "integer %d is out of range", h.u)
		}
		return int64(h.u), nil
	case kindFloat:
		if h.f == math.Trunc(h.f) && h.f >= math.MinInt64 && h.f < math.MaxInt64 {
			return int64(h.f), nil
		}
		return 0, r.errAt(h.off, "number %v is not an integer", h.f)
	}
	return 0, r.errAt(h.off, "is %s, want an integer", h.kind.a())
}

// float reads a finite number, float or integer; nil is 0.
func (r *reader) float() (float64, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return 0, err
	}
	switch h.kind {
	case kindNil:
		return 0, nil
	case kindInt:
		return float64(h.i), nil
	case kindUint:
		return float64(h.u), nil
	case kindFloat:
		if math.IsNaN(h.f) || math.IsInf(h.f, 0) {
			return 0, r.errAt(h.off, "number %v is not finite", h.f)
		}
		return h.f, nil
	}
	return 0, r.errAt(h.off, "is %s, want a number", h.kind.a())
}

// bool reads a boolean; nil is false.
func (r *reader) bool() (bool, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return false, err
	}
	switch h.kind {
	case kindNil:
		return false, nil
	case kindBool:
		return h.isTrue, nil
	}
	return false, r.errAt(h.off, "is %s, want a boolean", h.kind.a())
}

// mapLen reads the head of a map, -1 for nil. depth is the map's own level.
func (r *reader) mapLen(depth int) (int, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return 0, err
	}
	switch h.kind {
	case kindNil:
		return -1, nil
	case kindMap:
		if depth > MaxDecodeDepth {
			return 0, r.errAt(h.off, "nests deeper than %d levels", MaxDecodeDepth)
		}
		return h.n, nil
	}
	return 0, r.errAt(h.off, "is %s, want a map", h.kind.a())
}

// arrayLen reads the head of an array, -1 for nil. depth is the array's own
// level.
func (r *reader) arrayLen(depth int) (int, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return 0, err
	}
	switch h.kind {
	case kindNil:
		return -1, nil
	case kindArray:
		if depth > MaxDecodeDepth {
			return 0, r.errAt(h.off, "nests deeper than %d levels", MaxDecodeDepth)
		}
		return h.n, nil
	}
	return 0, r.errAt(h.off, "is %s, want an array", h.kind.a())
}

// key reads the key of an entry of a typed map, which must be a string; it
// is returned without copying, for comparison with the known field names.
func (r *reader) key() ([]byte, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return nil, err
	}
	if h.kind != kindStr && h.kind != kindBin {
		return nil, r.errAt(h.off, "has %s as a map key, want a string", h.kind.a())
	}
	return r.bytes(h), nil
}

// skip passes over one value without building it; it still checks lengths
// and depth, so that an unknown field is no way around the bounds.
func (r *reader) skip(depth int) *DecodeError {
	h, err := r.next()
	if err != nil {
		return err
	}
	switch h.kind {
	case kindStr, kindBin, kindExt:
		r.off += h.n
	case kindArray, kindMap:
		if depth > MaxDecodeDepth {
			return r.errAt(h.off, "nests deeper than %d levels", MaxDecodeDepth)
		}
		n := h.n
		if h.kind == kindMap {
			n *= 2
		}
		for i := range n {
			if err := r.skip(depth + 1); err != nil {
				if h.kind == kindArray {
					return err.under("[" + strconv.Itoa(i) + "]")
				}
				return err
			}
		}
	}
	return nil
}
