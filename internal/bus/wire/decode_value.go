package wire

import (
	"encoding/binary"
	"strconv"
	"time"
)

// value reads one untyped value, as arguments, partial results and details
// are: maps become map[string]any (whatever their keys; MessagePack allows
// keys that JSON does not), arrays []any, strings and binaries string,
// integers and floats the Go type of their MessagePack width (int8 for a
// fixint, as vmihailenco/msgpack gives), timestamps time.Time. depth is the
// value's own level.
func (r *reader) value(depth int) (any, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return nil, err
	}
	switch h.kind {
	case kindNil:
		return nil, nil
	case kindBool:
		return h.isTrue, nil
	case kindInt:
		return r.boxInt(h)
	case kindUint:
		return r.boxUint(h)
	case kindFloat:
		if err := r.charge(h.off, costBox); err != nil {
			return nil, err
		}
		if h.f32 {
			return float32(h.f), nil
		}
		return h.f, nil
	case kindStr, kindBin:
		if h.n == 0 {
			return "", nil
		}
		if err := r.charge(h.off, costBox); err != nil {
			return nil, err
		}
		return r.text(h)
	case kindExt:
		return r.timestamp(h)
	case kindArray:
		if depth > MaxDecodeDepth {
			return nil, r.errAt(h.off, "nests deeper than %d levels", MaxDecodeDepth)
		}
		// next checked h.n against the bytes left: each element takes one
		// at least, so the slice is never larger than the message allows.
		if err := r.charge(h.off, costSliceBox+costAnySlot*h.n); err != nil {
			return nil, err
		}
		a := make([]any, h.n)
		for i := range a {
			v, err := r.value(depth + 1)
			if err != nil {
				return nil, err.under("[" + strconv.Itoa(i) + "]")
			}
			a[i] = v
		}
		return a, nil
	case kindMap:
		if depth > MaxDecodeDepth {
			return nil, r.errAt(h.off, "nests deeper than %d levels", MaxDecodeDepth)
		}
		return r.mapEntries(h, depth)
	}
	panic("unreachable")
}

// anyMap reads an untyped map (args, details); nil is a nil map. depth is
// the map's own level.
func (r *reader) anyMap(depth int) (map[string]any, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return nil, err
	}
	switch h.kind {
	case kindNil:
		return nil, nil
	case kindMap:
		if depth > MaxDecodeDepth {
			return nil, r.errAt(h.off, "nests deeper than %d levels", MaxDecodeDepth)
		}
		return r.mapEntries(h, depth)
	}
	return nil, r.errAt(h.off, "is %s, want a map", h.kind.a())
}

// mapEntries reads the h.n entries of a map whose head is h.
func (r *reader) mapEntries(h head, depth int) (map[string]any, *DecodeError) {
	if err := r.charge(h.off, mapCost(h.n)); err != nil {
		return nil, err
	}
	m := make(map[string]any, h.n) // h.n ≤ half the bytes left, checked by next
	for range h.n {
		k, err := r.anyKey()
		if err != nil {
			return nil, err
		}
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err.under(keySegment(k))
		}
		m[k] = v
	}
	return m, nil
}

// anyKey reads the key of an untyped map as a string: strings and binaries
// as they are, numbers, booleans and nil as fmt.Sprint writes them (as the
// decoder before this one did). A map or an array as a key is refused.
func (r *reader) anyKey() (string, *DecodeError) {
	h, err := r.next()
	if err != nil {
		return "", err
	}
	var k string
	switch h.kind {
	case kindStr, kindBin:
		return r.text(h)
	case kindNil:
		return "<nil>", nil
	case kindBool:
		return strconv.FormatBool(h.isTrue), nil
	case kindInt:
		k = strconv.FormatInt(h.i, 10)
	case kindUint:
		k = strconv.FormatUint(h.u, 10)
	case kindFloat:
		bits := 64
		if h.f32 {
			bits = 32
		}
		k = strconv.FormatFloat(h.f, 'g', -1, bits)
	default:
		return "", r.errAt(h.off, "has %s as a map key", h.kind.a())
	}
	if err := r.charge(h.off, stringCost(len(k))); err != nil {
		return "", err
	}
	return k, nil
}

func (r *reader) boxInt(h head) (any, *DecodeError) {
	// Boxing a one-byte value allocates nothing; wider ones may.
	code := r.b[h.off]
	if code <= 0x7f || code >= 0xe0 || code == 0xd0 {
		return int8(h.i), nil
	}
	if err := r.charge(h.off, costBox); err != nil {
		return nil, err
	}
	switch code {
	case 0xd1:
		return int16(h.i), nil
	case 0xd2:
		return int32(h.i), nil
	}
	return h.i, nil
}

func (r *reader) boxUint(h head) (any, *DecodeError) {
	code := r.b[h.off]
	if code == 0xcc {
		return uint8(h.u), nil
	}
	if err := r.charge(h.off, costBox); err != nil {
		return nil, err
	}
	switch code {
	case 0xcd:
		return uint16(h.u), nil
	case 0xce:
		return uint32(h.u), nil
	}
	return h.u, nil
}

// timestamp decodes the MessagePack timestamp extension (type -1), the only
// extension a tool's value may hold: it is what encoders write for a
// time.Time.
func (r *reader) timestamp(h head) (any, *DecodeError) {
	if h.ext != -1 {
		return nil, r.errAt(h.off, "is an extension of type %d, which the protocol does not use", h.ext)
	}
	b := r.bytes(h)
	var t time.Time
	switch len(b) {
	case 4:
		t = time.Unix(int64(binary.BigEndian.Uint32(b)), 0)
	case 8:
		v := binary.BigEndian.Uint64(b)
		t = time.Unix(int64(v&(1<<34-1)), int64(v>>34))
	case 12:
		t = time.Unix(int64(binary.BigEndian.Uint64(b[4:])), int64(binary.BigEndian.Uint32(b)))
	default:
		return nil, r.errAt(h.off, "is a timestamp of %d bytes, want 4, 8 or 12", len(b))
	}
	if err := r.charge(h.off, 32); err != nil {
		return nil, err
	}
	return t, nil
}
