package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/limiter"
	"github.com/agentfleet/agentfleet/internal/cost"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/profile"
	"github.com/nats-io/nuid"
)

// endpointModels wires the endpoints of the agents file: one client per
// endpoint (and streaming mode), each attempt admitted by the fleet's
// shared quota, each response priced. It returns the default model and
// its name, and the ModelFor of the profiles.
func (m *Main) endpointModels(ctx context.Context, jetStream bool) (loop.Model, string, func(p *orchestrator.Profile) loop.Model, error) {
	eps := m.endpoints
	if jetStream {
		models := map[string]limiter.Model{}
		for _, ep := range eps {
			for _, md := range ep.Models {
				models[md.Name] = limiter.Model{Endpoint: ep.Name, Limits: md.Limits}
			}
		}
		var err error
		m.limiter, err = limiter.New(ctx, m.nc, limiter.Config{
			Node: "orchestrator-" + nuid.Next(), Subjects: bus.Subjects{Prefix: m.Prefix}, Models: models,
			Replicas: m.Streams.Replicas, Observer: m.metrics, Logger: m.logger,
		})
		if err != nil {
			return nil, "", nil, err
		}
	} else {
		m.logger.Warn("the server has no JetStream: the endpoints' limits are not shared, and not enforced; costs are still counted")
	}
	name := m.Model
	if name == "" {
		name = eps[0].Models[0].Name
	}
	cfgFile := &profile.Config{Endpoints: eps}
	if ep, _ := cfgFile.Endpoint(name); ep == nil {
		return nil, "", nil, fmt.Errorf("--model %q is not served by any endpoint of --config", name)
	}
	clients := map[string]loop.Model{} // endpoint name + "/" + stream
	client := func(ep *profile.Endpoint, stream bool) (loop.Model, error) {
		key := fmt.Sprintf("%s/%v", ep.Name, stream)
		if c, ok := clients[key]; ok {
			return c, nil
		}
		s := stream
		cfg := llm.Config{
			APIKey: ep.APIKey(), BaseURL: ep.BaseURL, Model: ep.Models[0].Name, Stream: &s,
			Concurrency: m.LLMConc, RequestTimeout: m.LLMTimeout, MaxRetryDelay: m.MaxRetryDelay,
			Observe: func(d time.Duration, err error) { m.metrics.LLMRequest(d, err, llm.Class(err)) },
		}
		if m.limiter != nil {
			cfg.Gate = m.limiter
		}
		c, err := llm.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("endpoint %q: %w", ep.Name, err)
		}
		prices := map[string]cost.Price{}
		for _, md := range ep.Models {
			prices[md.Name] = md.Price
		}
		priced := &cost.Model{Next: c, Prices: prices, Default: cfg.Model, OnCost: m.spent,
			OnBadUsage: func(model string, err error) {
				m.logger.Warn("a model response's usage could not be priced", "model", model, "err", err)
			}}
		clients[key] = priced
		return priced, nil
	}
	def, _ := cfgFile.Endpoint(name)
	model, err := client(def, m.LLMStream)
	if err != nil {
		return nil, "", nil, err
	}
	for _, ep := range eps {
		m.logger.Info("model endpoint", "endpoint", ep.Name, "base_url", ep.BaseURL, "models", modelNames(ep), "shared_limits", m.limiter != nil)
	}
	modelFor := func(p *orchestrator.Profile) loop.Model {
		ep, _ := cfgFile.Endpoint(p.Model)
		if ep == nil {
			ep = def
		}
		stream := m.LLMStream
		if p.Stream != nil {
			stream = *p.Stream
		}
		c, err := client(ep, stream)
		if err != nil {
			return model
		}
		return c
	}
	return model, name, modelFor, nil
}

// spent counts a priced response: the metric, and the agent's spend today
// across the fleet.
func (m *Main) spent(agent, model string, usd float64) {
	m.metrics.ModelCost(agent, model, usd)
	if m.limiter != nil {
		m.limiter.AddSpend(agent, usd)
	}
}

// agentCost is the orchestrator's AgentCost: the fleet's spend of an agent
// today, from the quota bucket; nil without it.
func (m *Main) agentCost() func(agent string) float64 {
	if m.limiter == nil {
		return nil
	}
	return m.limiter.AgentSpend
}

func modelNames(ep profile.Endpoint) string {
	var names []string
	for _, md := range ep.Models {
		names = append(names, md.Name)
	}
	return strings.Join(names, ",")
}
