package wire

import (
	"github.com/vmihailenco/msgpack/v5"
)

// A field is one key of a frame's map, with how its value is written and
// how it is read, in one place. Each frame has one table of fields
// (frame_fields.go) that drives both its encoder and its bounded decoder,
// so the two cannot drift apart: a key is added, renamed or dropped in one
// line.
type field[T any] struct {
	key string
	// omit reports that the field is left out of the encoding (an empty
	// optional field); nil: the field is always written.
	omit func(*T) bool
	// enc writes the field's value (its key is written by the table).
	enc func(*msgpack.Encoder, *T) error
	// dec reads the field's value at depth, the nesting level of the
	// values of the map that holds it.
	dec func(r *reader, v *T, depth int) *DecodeError
}

// encodeFields writes v as a map of the fields of fs that are not omitted.
func encodeFields[T any](enc *msgpack.Encoder, fs []field[T], v *T) error {
	n := 0
	for i := range fs {
		if fs[i].omit == nil || !fs[i].omit(v) {
			n++
		}
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	for i := range fs {
		f := &fs[i]
		if f.omit != nil && f.omit(v) {
			continue
		}
		if err := enc.EncodeString(f.key); err != nil {
			return err
		}
		if err := f.enc(enc, v); err != nil {
			return err
		}
	}
	return nil
}

// decodeFields reads the n entries of a map into v: a key of fs is read by
// its field, any other key (or one keep refuses, when keep is not nil) is
// checked and skipped, not built, so that a newer peer may add fields.
// depth is the nesting level of the map's values.
func decodeFields[T any](r *reader, fs []field[T], v *T, n, depth int, keep func(k []byte) bool) *DecodeError {
	for range n {
		k, err := r.key()
		if err != nil {
			return err
		}
		f := lookupField(fs, k)
		if f == nil || (keep != nil && !keep(k)) {
			err = r.skip(depth)
		} else {
			err = f.dec(r, v, depth)
		}
		if err != nil {
			return err.under(keySegment(string(k)))
		}
	}
	return nil
}

// lookupField returns the field of fs whose key is k, or nil. The tables
// hold a dozen keys at most, so a scan (string(k) compares in place, with
// no allocation) is as fast as a map.
func lookupField[T any](fs []field[T], k []byte) *field[T] {
	for i := range fs {
		if fs[i].key == string(k) {
			return &fs[i]
		}
	}
	return nil
}

// The builders of the common kinds of field. p points into the frame.

// text is a string field, left out when empty unless always.
func text[T any](key string, always bool, p func(*T) *string) field[T] {
	f := field[T]{
		key: key,
		enc: func(enc *msgpack.Encoder, v *T) error { return enc.EncodeString(*p(v)) },
		dec: func(r *reader, v *T, _ int) (err *DecodeError) {
			*p(v), err = r.str()
			return err
		},
	}
	if !always {
		f.omit = func(v *T) bool { return *p(v) == "" }
	}
	return f
}

// integer is an integer field, left out when zero unless always.
func integer[T any, I ~int | ~int64](key string, always bool, p func(*T) *I) field[T] {
	f := field[T]{
		key: key,
		enc: func(enc *msgpack.Encoder, v *T) error { return enc.EncodeInt(int64(*p(v))) },
		dec: func(r *reader, v *T, _ int) *DecodeError {
			n, err := r.int()
			*p(v) = I(n)
			return err
		},
	}
	if !always {
		f.omit = func(v *T) bool { return *p(v) == 0 }
	}
	return f
}

// number is a finite, non-negative float field (a cost), left out when
// zero.
func number[T any](key string, p func(*T) *float64) field[T] {
	return field[T]{
		key:  key,
		omit: func(v *T) bool { return *p(v) == 0 },
		enc:  func(enc *msgpack.Encoder, v *T) error { return enc.EncodeFloat64(*p(v)) },
		dec: func(r *reader, v *T, _ int) *DecodeError {
			off := r.off
			f, err := r.float()
			if err == nil && f < 0 {
				return r.errAt(off, "number %v is negative", f)
			}
			*p(v) = f
			return err
		},
	}
}

// flag is a boolean field, left out when false.
func flag[T any](key string, p func(*T) *bool) field[T] {
	return field[T]{
		key:  key,
		omit: func(v *T) bool { return !*p(v) },
		enc:  func(enc *msgpack.Encoder, v *T) error { return enc.EncodeBool(*p(v)) },
		dec: func(r *reader, v *T, _ int) (err *DecodeError) {
			*p(v), err = r.bool()
			return err
		},
	}
}

// texts is an array of strings, left out when empty.
func texts[T any](key string, p func(*T) *[]string) field[T] {
	return field[T]{
		key:  key,
		omit: func(v *T) bool { return len(*p(v)) == 0 },
		enc:  func(enc *msgpack.Encoder, v *T) error { return enc.Encode(*p(v)) },
		dec: func(r *reader, v *T, depth int) (err *DecodeError) {
			*p(v), err = r.strings(depth)
			return err
		},
	}
}
