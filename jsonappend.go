package agentfleet

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The JSON primitives of the event encoder. Each writes what encoding/json's
// Marshal writes for the same value, HTML-safe escaping included.

const hexDigits = "0123456789abcdef"

// jsonSafe marks the ASCII bytes that Marshal writes as they are inside a
// string: not a control character, quote, backslash, <, > or &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendJSONString appends s as a JSON string: invalid UTF-8 becomes
// U+FFFD, and <, >, &, U+2028 and U+2029 are escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONFloat appends f as Marshal writes a float64: like %g, but with
// ES6's exponent cutoffs and exponents not padded. NaN and the infinities
// are errors.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// maxJSONDepth is how deep appendJSONValue nests by hand; deeper values go
// to Marshal, which also finds cycles (a map that holds itself).
const maxJSONDepth = 32

// appendJSONValue appends v, a value decoded from JSON or built like one.
// The types that JSON decodes into are written by hand, maps with their
// keys sorted as Marshal sorts them; any other type goes to Marshal.
func appendJSONValue(b []byte, v any) ([]byte, error) { return appendJSONValueAt(b, v, 0) }

func appendJSONValueAt(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return appendMarshal(b, v)
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, v), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case float64:
		return appendJSONFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case map[string]any:
		return appendJSONObjectAt(b, v, depth)
	case []any:
		if v == nil {
			return append(b, "null"...), nil
		}
		n0 := len(b)
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONValueAt(b, e, depth+1); err != nil {
				return b[:n0], err
			}
		}
		return append(b, ']'), nil
	}
	return appendMarshal(b, v)
}

// appendJSONObject appends m with its keys in sorted order; a nil map is
// null.
func appendJSONObject(b []byte, m map[string]any) ([]byte, error) { return appendJSONObjectAt(b, m, 0) }

func appendJSONObjectAt(b []byte, m map[string]any, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return appendMarshal(b, m)
	}
	if m == nil {
		return append(b, "null"...), nil
	}
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	n0 := len(b)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendJSONValueAt(b, m[k], depth+1); err != nil {
			return b[:n0], err
		}
	}
	return append(b, '}'), nil
}

// appendMarshal appends v as json.Marshal writes it.
func appendMarshal(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

// appendJSONTime appends t as its MarshalJSON writes it.
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	out, err := t.AppendText(append(b, '"'))
	if err != nil {
		return b, fmt.Errorf("json: %w", err)
	}
	return append(out, '"'), nil
}
