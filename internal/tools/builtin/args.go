package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// The helpers in this file read arguments that the pipeline has already
// validated against the tool's schema. They check again anyway, because a
// tool may be called without validation (in tests, or by a worker that trusts
// its caller), and because numbers arrive in several Go types depending on
// the codec: float64 or json.Number from JSON, any sized integer or float
// from MessagePack.

// stringArg returns the string argument key of args. It fails when the
// argument is missing (and required) or is not a string. ok reports whether
// the argument was present.
func stringArg(tool string, args map[string]any, key string, required bool) (s string, ok bool, err error) {
	v, present := args[key]
	if !present || v == nil {
		if required {
			return "", false, fmt.Errorf("%s: missing required argument %q", tool, key)
		}
		return "", false, nil
	}
	s, isString := v.(string)
	if !isString {
		return "", false, fmt.Errorf("%s: argument %q must be a string, got %s", tool, key, typeName(v))
	}
	return s, true, nil
}

// intArg returns the integer argument key of args, which must lie in
// [lo, hi]. A missing argument is an error when required and otherwise
// yields def. Integral floats (3.0) are accepted; fractional ones are not.
func intArg(tool string, args map[string]any, key string, required bool, def, lo, hi int64) (int64, error) {
	v, present := args[key]
	if !present || v == nil {
		if required {
			return 0, fmt.Errorf("%s: missing required argument %q", tool, key)
		}
		return def, nil
	}
	n, err := toInt64(v)
	if err != nil {
		return 0, fmt.Errorf("%s: argument %q %v", tool, key, err)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s: argument %q must be between %d and %d, got %d", tool, key, lo, hi, n)
	}
	return n, nil
}

// Int converts an integral number as JSON (float64, json.Number) or
// MessagePack (any int or uint size) decoding yields it; fractions and
// values out of range are errors.
func Int(v any) (int64, error) { return toInt64(v) }

// toInt64 converts a number of any of the types that JSON or MessagePack
// decoding yields to an int64. Its errors complete a sentence that starts
// with the argument's name: "must be an integer, got 1.5".
func toInt64(v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int8:
		return int64(n), nil
	case int16:
		return int64(n), nil
	case int32:
		return int64(n), nil
	case int64:
		return n, nil
	case uint:
		return uintToInt64(uint64(n))
	case uint8:
		return int64(n), nil
	case uint16:
		return int64(n), nil
	case uint32:
		return int64(n), nil
	case uint64:
		return uintToInt64(n)
	case float32:
		return floatToInt64(float64(n))
	case float64:
		return floatToInt64(n)
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			// Either not a number at all, or an integer too large for
			// float64 (ParseFloat reports ErrRange with ±Inf).
			if math.IsInf(f, 0) {
				return 0, fmt.Errorf("is out of range, got %s", n)
			}
			return 0, fmt.Errorf("must be an integer, got %q", string(n))
		}
		return floatToInt64(f)
	default:
		return 0, fmt.Errorf("must be an integer, got %s", typeName(v))
	}
}

func uintToInt64(n uint64) (int64, error) {
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("is out of range, got %d", n)
	}
	return int64(n), nil
}

func floatToInt64(f float64) (int64, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("must be an integer, got %v", f)
	case f != math.Trunc(f):
		return 0, fmt.Errorf("must be an integer, got %s", strconv.FormatFloat(f, 'g', -1, 64))
	case f < -(1<<63) || f >= 1<<63:
		return 0, fmt.Errorf("is out of range, got %s", strconv.FormatFloat(f, 'g', -1, 64))
	}
	return int64(f), nil
}

// typeName names the JSON type of a decoded value, for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "a number"
	default:
		return fmt.Sprintf("a value of type %T", v)
	}
}

// mustSchema compacts a JSON Schema literal of this package. It panics on
// invalid JSON: the literals are constants, and the tests check them.
func mustSchema(s string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		panic(fmt.Sprintf("builtin: invalid schema literal: %v", err))
	}
	return json.RawMessage(b.Bytes())
}
