package sample

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/agentfleet/agentfleet/internal/tools"
)

func TestSample(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   map[string]any
	}{
		{"empty", `{"type":"object"}`, map[string]any{}},
		{"not JSON", `{`, map[string]any{}},
		{
			name: "required only, kinds, enum, minimum",
			schema: `{"type":"object","properties":{
				"city":{"type":"string"},
				"units":{"type":"string","enum":["metric","imperial"]},
				"days":{"type":"integer","minimum":3,"maximum":10},
				"ratio":{"type":"number","exclusiveMinimum":0},
				"neg":{"type":"integer","maximum":-5},
				"flag":{"type":"boolean"},
				"opt":{"type":"string"},
				"when":{"type":"string","format":"date-time"},
				"mail":{"type":"string","format":"email"},
				"long":{"type":"string","minLength":10},
				"short":{"type":"string","maxLength":3},
				"fixed":{"const":"v1"},
				"def":{"type":"integer","default":7},
				"maybe":{"type":["null","string"]},
				"step":{"type":"integer","minimum":1,"multipleOf":5}
			},"required":["city","units","days","ratio","neg","flag","when","mail","long","short","fixed","def","maybe","step"]}`,
			want: map[string]any{
				"city": "sample", "units": "metric", "days": 3.0, "ratio": 1e-9, "neg": -5.0, "flag": false,
				"when": "2024-01-01T00:00:00Z", "mail": "user@example.com", "long": "samplexxxx", "short": "sam",
				"fixed": "v1", "def": 7.0, "maybe": "sample", "step": 5.0,
			},
		},
		{
			name: "nested objects and arrays",
			schema: `{"type":"object","properties":{
				"place":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"},"name":{"type":"string"}},"required":["lat","lon"]},
				"tags":{"type":"array","items":{"type":"string"}},
				"pairs":{"type":"array","minItems":2,"items":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}},
				"choice":{"anyOf":[{"type":"integer","minimum":2},{"type":"string"}]}
			},"required":["place","tags","pairs","choice"]}`,
			want: map[string]any{
				"place":  map[string]any{"lat": 1.0, "lon": 1.0},
				"tags":   []any{"sample"},
				"pairs":  []any{map[string]any{"k": "sample"}, map[string]any{"k": "sample"}},
				"choice": 2.0,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Sample(json.RawMessage(tt.schema))
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Sample\n got %#v\nwant %#v", got, tt.want)
			}
			if len(tt.want) > 0 {
				s, err := tools.CompileSchema(json.RawMessage(tt.schema))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(got); err != nil {
					t.Fatalf("the sample does not satisfy its schema: %v", err)
				}
			}
		})
	}
}
