package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// run calls tool's handler with args, collecting progress partials.
func run(ctx context.Context, t *testing.T, tool *agentfleet.Tool, args map[string]any) (*agentfleet.ToolResult, error) {
	t.Helper()
	return tool.Handler.Call(ctx, &agentfleet.Call{
		ID:        "call_1",
		Name:      tool.Name,
		Arguments: args,
		Progress:  func(any) {},
	})
}

// text returns the joined text of a result.
func text(res *agentfleet.ToolResult) string { return agentfleet.JoinText(res.Content) }

func TestAllOrder(t *testing.T) {
	var names []string
	for _, tool := range All(Options{}) {
		names = append(names, tool.Name)
	}
	if got, want := strings.Join(names, ","), "get_time,calculator,sleep,echo,http_fetch,get_weather"; got != want {
		t.Errorf("All names = %s, want %s", got, want)
	}
}

func TestDefinitions(t *testing.T) {
	for _, tool := range All(Options{}) {
		t.Run(tool.Name, func(t *testing.T) {
			if tool.Handler == nil {
				t.Error("Handler is nil")
			}
			if tool.Label == "" || tool.Description == "" {
				t.Errorf("Label %q, Description %q: want both set", tool.Label, tool.Description)
			}
			if !tool.Parallel {
				t.Error("Parallel = false, want true")
			}
			if !tool.Annotations.Idempotent || tool.Annotations.Destructive {
				t.Errorf("Annotations = %+v, want idempotent and not destructive", tool.Annotations)
			}
			// The definition crosses the wire as JSON.
			if _, err := json.Marshal(tool.ToolDef); err != nil {
				t.Errorf("marshal ToolDef: %v", err)
			}
		})
	}
}

func TestInputSchemas(t *testing.T) {
	for _, tool := range All(Options{}) {
		t.Run(tool.Name, func(t *testing.T) {
			var s struct {
				Type                 string                     `json:"type"`
				Properties           map[string]json.RawMessage `json:"properties"`
				Required             []string                   `json:"required"`
				AdditionalProperties *bool                      `json:"additionalProperties"`
			}
			if err := json.Unmarshal(tool.InputSchema, &s); err != nil {
				t.Fatalf("InputSchema is not a JSON object: %v\n%s", err, tool.InputSchema)
			}
			if got, want := s.Type, "object"; got != want {
				t.Errorf("type = %q, want %q", got, want)
			}
			if len(s.Required) == 0 {
				t.Error("no required properties")
			}
			for _, r := range s.Required {
				if _, ok := s.Properties[r]; !ok {
					t.Errorf("required property %q is not declared in properties", r)
				}
			}
			if s.AdditionalProperties == nil || *s.AdditionalProperties {
				t.Error(`"additionalProperties" is not false`)
			}

			// And it is a JSON Schema that a validator accepts.
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.InputSchema))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			if err := c.AddResource("schema.json", doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("schema.json")
			if err != nil {
				t.Fatalf("compile InputSchema: %v", err)
			}
			if err := sch.Validate(map[string]any{}); err == nil {
				t.Error("schema accepts {} although properties are required")
			}
		})
	}
}

func TestSchemasAcceptExamples(t *testing.T) {
	examples := map[string]string{
		"get_time":    `{"timezone":"Asia/Tokyo"}`,
		"calculator":  `{"expression":"1+2"}`,
		"sleep":       `{"ms":250}`,
		"echo":        `{"text":""}`,
		"http_fetch":  `{"url":"https://example.com/","max_bytes":100}`,
		"get_weather": `{"city":"Tokyo"}`,
	}
	for _, tool := range All(Options{}) {
		t.Run(tool.Name, func(t *testing.T) {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.InputSchema))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			if err := c.AddResource("schema.json", doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile("schema.json")
			if err != nil {
				t.Fatal(err)
			}
			ex, ok := examples[tool.Name]
			if !ok {
				t.Fatal("no example arguments for this tool")
			}
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(ex))
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(inst); err != nil {
				t.Errorf("schema rejects %s: %v", ex, err)
			}
			extra, _ := jsonschema.UnmarshalJSON(strings.NewReader(ex[:len(ex)-1] + `,"bogus":1}`))
			if err := sch.Validate(extra); err == nil {
				t.Errorf("schema accepts an unknown property")
			}
		})
	}
}

func TestSelect(t *testing.T) {
	all := All(Options{})
	tests := []struct {
		name    string
		names   []string
		want    []string
		wantErr string
	}{
		{"none", nil, nil, ""},
		{"some in given order", []string{"echo", "get_time"}, []string{"echo", "get_time"}, ""},
		{"duplicate once", []string{"sleep", "sleep"}, []string{"sleep"}, ""},
		{"unknown", []string{"echo", "foo"}, nil,
			`builtin: unknown tool "foo" (have: get_time, calculator, sleep, echo, http_fetch, get_weather)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Select(all, tt.names)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("Select error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range got {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("Select = %v, want %v", names, tt.want)
			}
		})
	}
}
