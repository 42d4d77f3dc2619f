package fleet

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
)

func TestToolMetadataRoundTrip(t *testing.T) {
	d := agentfleet.ToolDef{Name: "get_weather", Label: "Weather", Description: "d", InputSchema: []byte(`{"type":"object"}`),
		Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true}, Parallel: true, TimeoutMS: 1500}
	got, err := ToolFromMetadata(d.Name, ToolMetadata(&d))
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != d.Name || got.Label != d.Label || string(got.InputSchema) != string(d.InputSchema) || got.Annotations != d.Annotations || !got.Parallel || got.TimeoutMS != 1500 {
		t.Errorf("round trip = %+v", got)
	}
	if _, err := ToolFromMetadata("x", map[string]string{MetaInputSchema: "{"}); err == nil || !strings.Contains(err.Error(), "input_schema is not valid JSON") {
		t.Errorf("bad schema: %v", err)
	}
}

func FuzzToolFromMetadata(f *testing.F) {
	f.Add("echo", `{"type":"object"}`, `{"read_only":true}`, "true", "1000")
	f.Add("x", "{", "[", "maybe", "-1")
	f.Fuzz(func(t *testing.T, name, schema, annotations, parallel, timeout string) {
		d, err := ToolFromMetadata(name, map[string]string{MetaInputSchema: schema, MetaAnnotations: annotations, MetaParallel: parallel, MetaTimeoutMS: timeout})
		if err == nil && (!bus.ValidToken(d.Name) || d.TimeoutMS < 0) {
			t.Errorf("accepted %+v", d)
		}
	})
}
