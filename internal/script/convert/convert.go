// Package convert turns Go values, as JSON and MessagePack decode them,
// into Starlark values and back, bounding their nesting. It imports only
// Starlark.
package convert

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"

	"go.starlark.net/starlark"
)

// maxNesting bounds the depth of values converted either way, so that a
// cyclic or absurdly deep value ends in an error rather than a stack
// overflow.
const maxNesting = 64

// ToStarlark converts a Go value of the kinds JSON and MessagePack decode to
// (maps with string keys, slices, strings, numbers, booleans, nil) into a
// new, unfrozen Starlark value. Integral floats become ints, so that
// args["count"] of a JSON 3 is 3 and works with range().
func ToStarlark(v any) (starlark.Value, error) { return toStarlarkDepth(v, 0) }

func toStarlarkDepth(v any, depth int) (starlark.Value, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("value nests deeper than %d levels", maxNesting)
	}
	switch x := v.(type) {
	case nil:
		return starlark.None, nil
	case starlark.Value:
		return x, nil
	case bool:
		return starlark.Bool(x), nil
	case string:
		return starlark.String(x), nil
	case []byte:
		return starlark.Bytes(x), nil
	case int:
		return starlark.MakeInt(x), nil
	case int8:
		return starlark.MakeInt64(int64(x)), nil
	case int16:
		return starlark.MakeInt64(int64(x)), nil
	case int32:
		return starlark.MakeInt64(int64(x)), nil
	case int64:
		return starlark.MakeInt64(x), nil
	case uint:
		return starlark.MakeUint(x), nil
	case uint8:
		return starlark.MakeUint64(uint64(x)), nil
	case uint16:
		return starlark.MakeUint64(uint64(x)), nil
	case uint32:
		return starlark.MakeUint64(uint64(x)), nil
	case uint64:
		return starlark.MakeUint64(x), nil
	case float32:
		return floatToStarlark(float64(x)), nil
	case float64:
		return floatToStarlark(x), nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return starlark.MakeInt64(i), nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %q: %v", x.String(), err)
		}
		return floatToStarlark(f), nil
	case map[string]any:
		d := starlark.NewDict(len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			sv, err := toStarlarkDepth(x[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", strconv.Quote(k), err)
			}
			if err := d.SetKey(starlark.String(k), sv); err != nil {
				return nil, err
			}
		}
		return d, nil
	case []any:
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			sv, err := toStarlarkDepth(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			elems[i] = sv
		}
		return starlark.NewList(elems), nil
	}
	// Other maps and slices (map[string]string, []map[string]any, ...)
	// through reflection.
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map with %s keys cannot become a Starlark dict; keys must be strings", rv.Type().Key())
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			m[it.Key().String()] = it.Value().Interface()
		}
		return toStarlarkDepth(m, depth)
	case reflect.Slice, reflect.Array:
		s := make([]any, rv.Len())
		for i := range s {
			s[i] = rv.Index(i).Interface()
		}
		return toStarlarkDepth(s, depth)
	case reflect.Pointer:
		if rv.IsNil() {
			return starlark.None, nil
		}
		return toStarlarkDepth(rv.Elem().Interface(), depth)
	}
	return nil, fmt.Errorf("a Go %T has no Starlark form", v)
}

func floatToStarlark(f float64) starlark.Value {
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return starlark.MakeInt64(int64(f))
	}
	return starlark.Float(f)
}

// ToGo converts a Starlark value into the Go values of JSON: dict →
// map[string]any (keys must be strings), list and tuple → []any, int →
// int64 (float64 when it does not fit), float → float64, string, bool, None
// → nil. Other values (functions, sets, modules) are an error naming their
// type.
func ToGo(v starlark.Value) (any, error) { return toGoDepth(v, 0) }

func toGoDepth(v starlark.Value, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("value nests deeper than %d levels", maxNesting)
	}
	switch x := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(x), nil
	case starlark.String:
		return string(x), nil
	case starlark.Bytes:
		return string(x), nil
	case starlark.Int:
		if i, ok := x.Int64(); ok {
			return i, nil
		}
		return float64(x.Float()), nil
	case starlark.Float:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("float %v has no JSON form", f)
		}
		return f, nil
	case *starlark.Dict:
		m := make(map[string]any, x.Len())
		for k, val := range x.Entries() {
			ks, ok := k.(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s; keys must be strings", k.String(), k.Type())
			}
			gv, err := toGoDepth(val, depth+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", strconv.Quote(string(ks)), err)
			}
			m[string(ks)] = gv
		}
		return m, nil
	case *starlark.List:
		return seqToGo(x, depth)
	case starlark.Tuple:
		return seqToGo(x, depth)
	}
	return nil, fmt.Errorf("a %s value has no JSON form", v.Type())
}

func seqToGo(s starlark.Indexable, depth int) ([]any, error) {
	out := make([]any, s.Len())
	for i := range out {
		gv, err := toGoDepth(s.Index(i), depth+1)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = gv
	}
	return out, nil
}
