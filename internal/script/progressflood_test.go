package script

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
)

// TestProgressFloodCutOff is the attack of a script that floods its
// progress: 1000 values of 200 kB, 200 MB in all. The values passed on add
// up to at most the call's MaxProgressBytes (1 MiB by default), every later
// one is dropped, and the call still ends with its result.
func TestProgressFloodCutOff(t *testing.T) {
	code := "def execute(args):\n    chunk = 'p' * 200000\n    for i in range(1000):\n        progress({'i': i, 'chunk': chunk})\n    return 'flooded'\n"
	for _, tc := range []struct {
		name  string
		env   Env
		limit int
	}{
		{"default bound", Env{Timeout: time.Minute}, DefaultMaxProgressBytes},
		{"smaller bound", Env{Timeout: time.Minute, MaxProgressBytes: 300_000}, 300_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := mustNew(t, def("flood", code), tc.env)
			var n, bytes int
			res, err := tool.Handler.Call(context.Background(), &agentfleet.Call{ID: "c", Name: "flood", Arguments: map[string]any{"city": "x"},
				Progress: func(v any) {
					b, _ := json.Marshal(v)
					n, bytes = n+1, bytes+len(b)
				}})
			if err != nil || agentfleet.JoinText(res.Content) != "flooded" {
				t.Fatalf("flood = %v, %v; want its result", res, err)
			}
			if bytes > tc.limit || n == 0 {
				t.Errorf("%d values of %d bytes passed on, want some and at most %d bytes", n, bytes, tc.limit)
			}
			t.Logf("%d values, %d bytes passed on", n, bytes)
		})
	}
}
