package script

import (
	"fmt"

	"go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// maxJSONDepth bounds the nesting json.decode and json.indent accept: the
// library's decoder recurses once per level, and a string of a few
// megabytes of "[" would overflow the Go stack, which kills the process.
const maxJSONDepth = 64

// jsonModule is the json module of scripts: the library's functions, after
// a scan of their input that bounds its nesting and charges what they will
// make.
var jsonModule = &starlarkstruct.Module{
	Name: "json",
	Members: starlark.StringDict{
		"encode":        starlark.NewBuiltin("json.encode", jsonEncode),
		"encode_indent": starlark.NewBuiltin("json.encode_indent", jsonEncodeIndent),
		"decode":        starlark.NewBuiltin("json.decode", jsonDecode),
		"indent":        starlark.NewBuiltin("json.indent", jsonIndent),
	},
}

func jsonLib(name string) *starlark.Builtin { return json.Module.Members[name].(*starlark.Builtin) }

func jsonEncode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) == 1 {
		if err := chargeText(thread, b.Name(), args[0]); err != nil {
			return nil, err
		}
	}
	return starlark.Call(thread, jsonLib("encode"), args, kwargs)
}

func jsonEncodeIndent(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x starlark.Value
	var prefix, indent starlark.Value = starlark.String(""), starlark.String("\t")
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "x", &x, "prefix?", &prefix, "indent?", &indent); err != nil {
		return nil, err
	}
	enc, err := jsonEncode(thread, b, starlark.Tuple{x}, nil)
	if err != nil {
		return nil, err
	}
	return jsonIndent(thread, b, starlark.Tuple{enc}, []starlark.Tuple{{starlark.String("prefix"), prefix}, {starlark.String("indent"), indent}})
}

func jsonDecode(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		if s, ok := args[0].(starlark.String); ok {
			sc, err := scanJSON(string(s))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", b.Name(), err)
			}
			// Every value becomes a Starlark value in a slot of its
			// list or an entry of its dict; strings are copied.
			size := addSize(mulSize(sc.tokens, entryBytes), int64(len(s)))
			if err := charge(thread, size, func() string { return fmt.Sprintf("%s of %s", b.Name(), describe(s)) }); err != nil {
				return nil, err
			}
		}
	}
	return starlark.Call(thread, jsonLib("decode"), args, kwargs)
}

func jsonIndent(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var s, prefix, indent string = "", "", "\t"
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "str", &s, "prefix?", &prefix, "indent?", &indent); err != nil {
		return nil, err
	}
	sc, err := scanJSON(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	// Each token may start a line: a newline, the prefix and an indent
	// per level.
	line := addSize(1+int64(len(prefix)), mulSize(int64(sc.depth), int64(len(indent))))
	size := addSize(int64(len(s)), mulSize(sc.tokens, line))
	if err := charge(thread, size, func() string { return fmt.Sprintf("%s of %s", b.Name(), describe(starlark.String(s))) }); err != nil {
		return nil, err
	}
	return starlark.Call(thread, jsonLib("indent"), args, kwargs)
}

// jsonScan is what scanJSON learnt of a text.
type jsonScan struct {
	tokens int64 // structural characters and values, an upper bound of the values
	depth  int   // deepest nesting
}

// scanJSON counts the structure of s without decoding it, and fails when
// it nests deeper than maxJSONDepth. It does not validate s: the decoder
// does that after it.
func scanJSON(s string) (jsonScan, error) {
	var sc jsonScan
	depth := 0
	sc.tokens = 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			sc.tokens++
			if depth > maxJSONDepth {
				return sc, fmt.Errorf("the JSON nests deeper than %d levels (at byte %d)", maxJSONDepth, i)
			}
			sc.depth = max(sc.depth, depth)
		case ']', '}':
			depth--
			sc.tokens++
		case ',', ':':
			sc.tokens++
		}
	}
	return sc, nil
}
