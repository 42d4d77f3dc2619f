package orchestrator

import "testing"

func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte("agents:\n  - name: a\n    tools: [calc*]\n    tool_timeout: 3s\n"))
	f.Add([]byte(`{"agents":[{"name":"x","mode":"parallel"}]}`))
	f.Add([]byte("agents: [{name: '[', tools: ['[']}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseProfiles(data)
		if err != nil {
			return
		}
		for _, p := range ps {
			if p.Name == "" || (p.Mode != "parallel" && p.Mode != "sequential") {
				t.Errorf("accepted profile %+v", p)
			}
		}
	})
}
