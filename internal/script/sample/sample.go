// Package sample makes up arguments that fit a tool's JSON schema, for a
// dry run of a script before it is stored. It imports only the standard
// library.
package sample

import (
	"encoding/json"
	"math"
	"strings"
)

// Sample returns arguments made up from schema for a dry run: the required
// properties of the top-level object, each with a value of its schema's
// kind. A value is the schema's const, else the first of its enum, else its
// default, else its first example, else made up from its type: strings of
// the schema's format (date-time, date, time, email, uri, uuid, hostname,
// ipv4, ipv6) or "sample" padded to minLength; numbers at the minimum (or
// just above an exclusive one) or 1 when that is in range; false for
// booleans; objects with their required properties; arrays of minItems
// (at least one) items. anyOf and oneOf take their first branch. Numbers
// are float64, as JSON decoding gives them. A schema that does not parse
// yields an empty map. Sample does not guarantee that the result satisfies
// keywords it does not know (pattern, $ref, dependencies).
func Sample(schema json.RawMessage) map[string]any {
	var s map[string]any
	if err := json.Unmarshal(schema, &s); err != nil || s == nil {
		return map[string]any{}
	}
	if m, ok := sampleObject(s, 0).(map[string]any); ok {
		return m
	}
	return map[string]any{}
}

const maxSampleDepth = 16

func sampleValue(s map[string]any, depth int) any {
	if depth > maxSampleDepth {
		return nil
	}
	if v, ok := s["const"]; ok {
		return v
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if v, ok := s["default"]; ok {
		return v
	}
	if e, ok := s["examples"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[key].([]any); ok && len(alts) > 0 {
			if first, ok := alts[0].(map[string]any); ok {
				merged := make(map[string]any, len(s)+len(first))
				for k, v := range s {
					if k != key {
						merged[k] = v
					}
				}
				for k, v := range first {
					merged[k] = v
				}
				return sampleValue(merged, depth+1)
			}
		}
	}
	switch schemaType(s) {
	case "object":
		return sampleObject(s, depth)
	case "array":
		return sampleArray(s, depth)
	case "string":
		return sampleString(s)
	case "integer":
		return sampleNumber(s, true)
	case "number":
		return sampleNumber(s, false)
	case "boolean":
		return false
	case "null":
		return nil
	}
	return "sample"
}

// schemaType returns the schema's type: the first non-null one of a list,
// or a guess from its keywords when it names none.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				return x
			}
		}
		if len(t) > 0 {
			return "null"
		}
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	case s["minimum"] != nil || s["maximum"] != nil:
		return "number"
	}
	return "string"
}

func sampleObject(s map[string]any, depth int) any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	req, _ := s["required"].([]any)
	for _, r := range req {
		name, ok := r.(string)
		if !ok {
			continue
		}
		ps, _ := props[name].(map[string]any)
		if ps == nil {
			out[name] = "sample"
			continue
		}
		out[name] = sampleValue(ps, depth+1)
	}
	return out
}

func sampleArray(s map[string]any, depth int) any {
	n := 1
	if m, ok := num(s["minItems"]); ok && m > 1 {
		n = int(min(m, 100))
	}
	items, _ := s["items"].(map[string]any)
	if items == nil {
		items = map[string]any{"type": "string"}
	}
	out := make([]any, n)
	for i := range out {
		out[i] = sampleValue(items, depth+1)
	}
	return out
}

func sampleString(s map[string]any) any {
	switch f, _ := s["format"].(string); f {
	case "date-time":
		return "2024-01-01T00:00:00Z"
	case "date":
		return "2024-01-01"
	case "time":
		return "12:00:00Z"
	case "email", "idn-email":
		return "user@example.com"
	case "uri", "url", "iri", "uri-reference", "iri-reference":
		return "https://example.com/"
	case "uuid":
		return "00000000-0000-4000-8000-000000000000"
	case "hostname", "idn-hostname":
		return "example.com"
	case "ipv4":
		return "192.0.2.1"
	case "ipv6":
		return "2001:db8::1"
	case "duration":
		return "PT1M"
	}
	v := "sample"
	if m, ok := num(s["minLength"]); ok && int(m) > len(v) {
		v += strings.Repeat("x", int(min(m, 4096))-len(v))
	}
	if m, ok := num(s["maxLength"]); ok && int(m) < len(v) {
		v = v[:max(int(m), 0)]
	}
	return v
}

func sampleNumber(s map[string]any, integer bool) any {
	lo, hasLo := num(s["minimum"])
	if x, ok := num(s["exclusiveMinimum"]); ok && (!hasLo || x >= lo) {
		lo, hasLo = x+smallest(integer, x), true
	}
	hi, hasHi := num(s["maximum"])
	if x, ok := num(s["exclusiveMaximum"]); ok && (!hasHi || x <= hi) {
		hi, hasHi = x-smallest(integer, x), true
	}
	v := 1.0
	switch {
	case hasLo:
		v = lo
	case hasHi && hi < 1:
		v = hi
	}
	if integer {
		if hasLo {
			v = math.Ceil(v)
		} else {
			v = math.Floor(v)
		}
	}
	if m, ok := num(s["multipleOf"]); ok && m > 0 && math.Mod(v, m) != 0 {
		v = math.Ceil(v/m) * m
	}
	return v
}

func smallest(integer bool, x float64) float64 {
	if integer {
		return 1
	}
	return math.Max(math.Abs(x)*1e-9, 1e-9)
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}
