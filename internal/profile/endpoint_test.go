package profile

import (
	"strings"
	"testing"
)

const endpointsYAML = `
endpoints:
  - name: openai
    base_url: https://api.openai.com/v1
    api_key_env: MY_OPENAI_KEY
    models:
      - name: gpt-4o-mini
        limits: {rpm: 500, tpm: 200000, concurrent: 16}
        price: {input: 0.15, cached_input: 0.075, output: 0.60}
  - name: local
    base_url: http://127.0.0.1:8000/v1
    models: [{name: llama}]
agents:
  - name: support
    model: gpt-4o-mini
    priority: interactive
    max_cost_per_run: 0.05
    max_cost_per_session: 1
    max_cost_per_agent: 20
  - name: nightly
    model: llama
    priority: batch
`

func TestParseEndpoints(t *testing.T) {
	c, err := ParseConfig([]byte(endpointsYAML))
	if err != nil {
		t.Fatal(err)
	}
	ep, m := c.Endpoint("gpt-4o-mini")
	if ep == nil || ep.Name != "openai" || m.Limits.RPM != 500 || m.Limits.TPM != 200000 || m.Limits.Concurrent != 16 || m.Price.Output != 0.60 {
		t.Fatalf("endpoint %+v model %+v", ep, m)
	}
	t.Setenv("MY_OPENAI_KEY", "sk-test")
	if ep.APIKey() != "sk-test" {
		t.Errorf("APIKey = %q", ep.APIKey())
	}
	if e, _ := c.Endpoint("nope"); e != nil {
		t.Error("unknown model found")
	}
	b := c.Agents[0].Budget()
	if b.MaxCostPerRun != 0.05 || b.MaxCostPerSession != 1 || b.MaxCostPerAgent != 20 || c.Agents[0].Priority != "interactive" {
		t.Errorf("budget %+v priority %q", b, c.Agents[0].Priority)
	}
}

// TestBadEndpoints: each bad value is refused with an error that names
// the endpoint or agent and the field.
func TestBadEndpoints(t *testing.T) {
	agent := "agents:\n  - name: a\n    model: m\n"
	ep := func(body string) string {
		return "endpoints:\n  - name: e\n    base_url: http://x/v1\n" + body + agent
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"negative rpm", ep("    models: [{name: m, limits: {rpm: -5}}]\n"), `endpoint "e": model "m": limit rpm -5 is negative`},
		{"negative tpm", ep("    models: [{name: m, limits: {tpm: -1}}]\n"), `limit tpm -1 is negative`},
		{"negative concurrent", ep("    models: [{name: m, limits: {concurrent: -1}}]\n"), `limit concurrent -1 is negative`},
		{"burst above rpm", ep("    models: [{name: m, limits: {rpm: 5, burst: 9}}]\n"), `limit burst 9 is above rpm 5`},
		{"negative price", ep("    models: [{name: m, price: {input: -0.1}}]\n"), `model "m": price input -0.1 is negative`},
		{"NaN price", ep("    models: [{name: m, price: {output: .nan}}]\n"), `price output NaN is not a number`},
		{"rpm not a number", ep("    models: [{name: m, limits: {rpm: lots}}]\n"), `cannot unmarshal`},
		{"unknown limit", ep("    models: [{name: m, limits: {rps: 5}}]\n"), `field rps not found`},
		{"no models", ep("    models: []\n"), `endpoint "e": no models`},
		{"model without name", ep("    models: [{name: ''}, {name: m}]\n"), `model 1: name "" is empty`},
		{"unknown model", "endpoints:\n  - name: e\n    base_url: http://x/v1\n    models: [{name: other}]\n" + agent, `agent "a": model "m" is not served by any endpoint (the endpoints serve other)`},
		{"unknown summary model", ep("    models: [{name: m}]\n") + "    summary_model: zz\n", `summary_model "zz" is not served`},
		{"model twice", "endpoints:\n  - {name: e, base_url: 'http://x', models: [{name: m}]}\n  - {name: f, base_url: 'http://y', models: [{name: m}]}\n" + agent, `endpoint "f": model "m" is served by endpoint "e" already`},
		{"endpoint twice", "endpoints:\n  - {name: e, base_url: 'http://x', models: [{name: m}]}\n  - {name: e, base_url: 'http://y', models: [{name: n}]}\n" + agent, `endpoint "e" is defined twice`},
		{"bad base url", "endpoints:\n  - {name: e, base_url: 'ftp://x', models: [{name: m}]}\n" + agent, `endpoint "e": base_url "ftp://x" is not an http or https URL`},
		{"bad endpoint name", "endpoints:\n  - {name: 'a.b', base_url: 'http://x', models: [{name: m}]}\n" + agent, `endpoint "a.b": endpoint name "a.b" may hold only`},
		{"bad key env", "endpoints:\n  - {name: e, base_url: 'http://x', api_key_env: 'A=B', models: [{name: m}]}\n" + agent, `api_key_env "A=B" is not the name`},
		{"negative cost budget", "agents:\n  - name: a\n    max_cost_per_run: -1\n", `agent "a": max_cost_per_run -1 is not a non-negative amount`},
		{"NaN cost budget", "agents:\n  - name: a\n    max_cost_per_agent: .nan\n", `max_cost_per_agent NaN`},
		{"unknown priority", "agents:\n  - name: a\n    priority: urgent\n", `agent "a": priority "urgent" is not interactive or batch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
