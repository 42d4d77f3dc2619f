package cost

import (
	"context"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// Model prices the responses of Next: it sets the Cost of each response's
// usage from the Price of the model asked for (the request's Model, else
// Default). A model without a price, or a response without usage, costs
// nothing; a usage that cannot be priced (ErrBadUsage) keeps cost 0 and
// is reported to OnBadUsage, when set.
type Model struct {
	Next loop.Model
	// Prices maps model names to their prices.
	Prices map[string]Price
	// Default is the model of requests that name none.
	Default string
	// OnBadUsage, if set, receives the error of a usage Of refused.
	OnBadUsage func(model string, err error)
	// OnCost, if set, receives the cost of each priced response, with
	// the request's agent and the model's name (metrics, the fleet's
	// spend per agent).
	OnCost func(agent, model string, usd float64)
}

var _ loop.Model = (*Model)(nil)

// Complete implements loop.Model.
func (m *Model) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	msg, err := m.Next.Complete(ctx, req, onDelta)
	if err != nil || msg == nil || msg.Usage == nil {
		return msg, err
	}
	name := m.Default
	if req != nil && req.Model != "" {
		name = req.Model
	}
	p, ok := m.Prices[name]
	if !ok {
		return msg, nil
	}
	c, cerr := Of(p, msg.Usage)
	if cerr != nil {
		if m.OnBadUsage != nil {
			m.OnBadUsage(name, cerr)
		}
		return msg, nil
	}
	u := *msg.Usage
	u.Cost = c
	msg.Usage = &u
	if m.OnCost != nil && req != nil {
		m.OnCost(req.Agent, name, c)
	}
	return msg, nil
}
