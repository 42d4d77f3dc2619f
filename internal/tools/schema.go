package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON Schema for the arguments of one tool.
type Schema struct {
	s *jsonschema.Schema
}

var printer = message.NewPrinter(language.English)

// CompileSchema compiles raw, a JSON Schema document. An empty raw yields a
// schema that accepts any object. The error says what is wrong with the
// schema.
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("input schema is not valid JSON: %w", err)
	}
	if _, ok := doc.(map[string]any); !ok {
		return nil, fmt.Errorf("input schema must be a JSON object, not %s", jsonKind(doc))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "mem:///input.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return &Schema{s: s}, nil
}

// Validate checks args against the schema. The error lists each violation
// with the location of the offending value, for example
// `arguments invalid: at "/city": got number, want string`.
func (s *Schema) Validate(args map[string]any) error {
	var v any = args
	if args == nil {
		v = map[string]any{}
	}
	err := s.s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("arguments invalid: %w", err)
	}
	var msgs []string
	collectLeaves(ve, &msgs)
	sort.Strings(msgs)
	msgs = dedupe(msgs)
	return fmt.Errorf("arguments invalid: %s", strings.Join(msgs, "; "))
}

func collectLeaves(e *jsonschema.ValidationError, out *[]string) {
	if len(e.Causes) == 0 {
		loc := "/" + strings.Join(e.InstanceLocation, "/")
		*out = append(*out, fmt.Sprintf("at %q: %s", loc, e.ErrorKind.LocalizedString(printer)))
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "a number"
	}
}
