package wire

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// tagged returns the msgpack keys of struct type t in field order, each
// with whether its tag says omitempty, leaving out the keys in skip.
func tagged(t reflect.Type, skip ...string) (keys []string, omitEmpty map[string]bool) {
	omitEmpty = map[string]bool{}
	for f := range t.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		if name == "" || name == "-" || slices.Contains(skip, name) {
			continue
		}
		keys = append(keys, name)
		omitEmpty[name] = strings.Contains(opts, "omitempty")
	}
	return keys, omitEmpty
}

func tableKeys[T any](fs []field[T]) (keys []string, omitted map[string]bool) {
	omitted = map[string]bool{}
	for _, f := range fs {
		keys = append(keys, f.key)
		omitted[f.key] = f.omit != nil
	}
	return keys, omitted
}

// TestFieldTablesMatchTags: each frame's field table has the keys of its
// struct's msgpack tags, in the same order, and leaves out when empty
// exactly the fields whose tag says omitempty, so that the encoding is the
// one the tags describe and a field added to a struct without its table
// entry fails here.
func TestFieldTablesMatchTags(t *testing.T) {
	check := func(name string, keys []string, omitted map[string]bool, typ reflect.Type, skip ...string) {
		t.Helper()
		want, omitEmpty := tagged(typ, skip...)
		if !slices.Equal(keys, want) {
			t.Errorf("%s: table keys %v, struct tags %v", name, keys, want)
		}
		for k, o := range omitted {
			if o != omitEmpty[k] {
				t.Errorf("%s: field %q left out when empty = %v, its tag's omitempty = %v", name, k, o, omitEmpty[k])
			}
		}
	}
	k, o := tableKeys(requestFields)
	check("call request", k, o, reflect.TypeFor[CallRequest]())
	k, o = tableKeys(frameFields)
	check("frame", k, o, reflect.TypeFor[Frame]())
	k, o = tableKeys(resultFields)
	check("tool result", k, o, reflect.TypeFor[agentfleet.ToolResult]())
	k, o = tableKeys(usageFields)
	check("usage", k, o, reflect.TypeFor[agentfleet.Usage]())
	// A result's content blocks are text or image blocks; the fields of
	// tool call blocks take the general path (encodeContent).
	k, o = tableKeys(contentFields)
	check("content block", k, o, reflect.TypeFor[agentfleet.Content](), "arguments", "tool_calls")
}

// TestLookupField finds each key of a table and nothing else.
func TestLookupField(t *testing.T) {
	for _, f := range frameFields {
		if got := lookupField(frameFields, []byte(f.key)); got == nil || got.key != f.key {
			t.Errorf("lookupField(%q) = %v", f.key, got)
		}
	}
	for _, k := range []string{"", "T", "ids", "resul", "result\x00"} {
		if got := lookupField(frameFields, []byte(k)); got != nil {
			t.Errorf("lookupField(%q) = %q, want none", k, got.key)
		}
	}
}
