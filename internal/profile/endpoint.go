package profile

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/cost"
	"github.com/agentfleet/agentfleet/internal/quota"
)

// Endpoint is a model endpoint of the agents file, a named resource: an
// OpenAI-compatible API, its key, and the models it serves with their
// limits (shared by every orchestrator of the fleet) and prices.
type Endpoint struct {
	// Name names the endpoint in the quota's keys, metrics and logs.
	Name string `yaml:"name" json:"name"`
	// BaseURL is the API root, up to its version (".../v1").
	BaseURL string `yaml:"base_url" json:"base_url"`
	// APIKeyEnv names the environment variable that holds the API key;
	// default OPENAI_API_KEY. The key itself is never in the file.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env"`
	// Models are the models the endpoint serves.
	Models []EndpointModel `yaml:"models" json:"models"`
}

// EndpointModel is one model of an endpoint.
type EndpointModel struct {
	// Name is the model name sent to the API; agents name it in model.
	Name   string       `yaml:"name" json:"name"`
	Limits quota.Limits `yaml:"limits" json:"limits"`
	Price  cost.Price   `yaml:"price" json:"price"`
}

// APIKey returns the endpoint's API key from its environment variable.
func (e *Endpoint) APIKey() string {
	name := e.APIKeyEnv
	if name == "" {
		name = "OPENAI_API_KEY"
	}
	return os.Getenv(name)
}

// check validates the endpoint i, its models not already in served (model
// name → endpoint name), which it adds to.
func (e *Endpoint) check(i int, served map[string]string) error {
	where := fmt.Sprintf("endpoint %d", i+1)
	if e.Name != "" {
		where = fmt.Sprintf("endpoint %q", e.Name)
	}
	if err := bus.CheckToken("endpoint", e.Name); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	u, err := url.Parse(e.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: base_url %q is not an http or https URL with a host", where, e.BaseURL)
	}
	if e.APIKeyEnv != "" && strings.ContainsAny(e.APIKeyEnv, "= \t\n\x00") {
		return fmt.Errorf("%s: api_key_env %q is not the name of an environment variable", where, e.APIKeyEnv)
	}
	if len(e.Models) == 0 {
		return fmt.Errorf("%s: no models: list the models it serves", where)
	}
	for j := range e.Models {
		m := &e.Models[j]
		if m.Name == "" || len(m.Name) > 256 || strings.ContainsAny(m.Name, " \t\r\n\x00") {
			return fmt.Errorf("%s: model %d: name %q is empty or has white space", where, j+1, m.Name)
		}
		if other, dup := served[m.Name]; dup {
			return fmt.Errorf("%s: model %q is served by endpoint %q already", where, m.Name, other)
		}
		served[m.Name] = e.Name
		if err := m.Limits.Check(); err != nil {
			return fmt.Errorf("%s: model %q: %w", where, m.Name, err)
		}
		if err := m.Price.Check(); err != nil {
			return fmt.Errorf("%s: model %q: %w", where, m.Name, err)
		}
	}
	return nil
}

// checkQuota validates the priority and the cost budgets of p.
func (p *Profile) checkQuota(where string) error {
	switch p.Priority {
	case "", agentfleet.PriorityInteractive, agentfleet.PriorityBatch:
	default:
		return fmt.Errorf("%s: priority %q is not interactive or batch", where, p.Priority)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"max_cost_per_run", p.MaxCostPerRun}, {"max_cost_per_session", p.MaxCostPerSession}, {"max_cost_per_agent", p.MaxCostPerAgent}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s: %s %v is not a non-negative amount of US dollars", where, f.name, f.v)
		}
	}
	return nil
}

// Config is the whole agents file: the agents, and the model endpoints
// they use.
type Config struct {
	Agents    []Profile
	Endpoints []Endpoint
}

// Endpoint returns the endpoint that serves model, and the model's entry;
// nil when none does.
func (c *Config) Endpoint(model string) (*Endpoint, *EndpointModel) {
	for i := range c.Endpoints {
		for j := range c.Endpoints[i].Models {
			if c.Endpoints[i].Models[j].Name == model {
				return &c.Endpoints[i], &c.Endpoints[i].Models[j]
			}
		}
	}
	return nil, nil
}

// checkModels validates the endpoints and, when there are any, that each
// agent's model and summary model is served by one.
func (c *Config) checkModels() error {
	served := map[string]string{}
	names := map[string]bool{}
	for i := range c.Endpoints {
		if err := c.Endpoints[i].check(i, served); err != nil {
			return err
		}
		if names[c.Endpoints[i].Name] {
			return fmt.Errorf("endpoint %q is defined twice", c.Endpoints[i].Name)
		}
		names[c.Endpoints[i].Name] = true
	}
	if len(c.Endpoints) == 0 {
		return nil
	}
	for _, p := range c.Agents {
		models := []struct{ field, model string }{{"model", p.Model}, {"summary_model", p.SummaryModel}}
		for _, m := range p.ForkModels {
			models = append(models, struct{ field, model string }{"fork_models entry", m})
		}
		for _, f := range models {
			if _, ok := served[f.model]; f.model != "" && !ok {
				return fmt.Errorf("agent %q: %s %q is not served by any endpoint (the endpoints serve %s)", p.Name, f.field, f.model, strings.Join(slices.Sorted(maps.Keys(served)), ", "))
			}
		}
	}
	return nil
}
