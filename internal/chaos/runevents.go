package chaos

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
)

// runEvents records, from the core NATS events of agent "default", who
// started each run (run.start), who resumed which run (run.resumed) and
// when each tool call began (tool.start).
type runEvents struct {
	subs []*nats.Subscription

	mu      sync.Mutex
	starts  map[string]int // orchestrator id → runs started
	resumed map[string]resumption
	tools   map[string]time.Time // tool call id → first tool.start
}

// resumption is one run.resumed event: who, and when it arrived.
type resumption struct {
	orchestrator string
	at           time.Time
}

// subscribeRunEvents subscribes the events it records and flushes, so that
// every event published afterwards is seen.
func subscribeRunEvents(nc *nats.Conn) (*runEvents, error) {
	r := &runEvents{starts: map[string]int{}, resumed: map[string]resumption{}, tools: map[string]time.Time{}}
	handle := func(m *nats.Msg) {
		now := time.Now()
		var e agentfleet.Event
		if json.Unmarshal(m.Data, &e) != nil {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		switch e.Type {
		case agentfleet.EventRunStart:
			r.starts[e.Orchestrator]++
		case agentfleet.EventRunResumed:
			key := e.Session + "/" + e.RunID
			if _, ok := r.resumed[key]; !ok {
				r.resumed[key] = resumption{orchestrator: e.Orchestrator, at: now}
			}
		case agentfleet.EventToolStart:
			if _, ok := r.tools[e.ToolCallID]; !ok {
				r.tools[e.ToolCallID] = now
			}
		}
	}
	prefix := "agent.events." + agentName + ".*."
	for _, s := range []string{"run.start", "run.resumed", "tool.start"} {
		sub, err := nc.Subscribe(prefix+s, handle)
		if err != nil {
			r.close()
			return nil, fmt.Errorf("subscribe events: %w", err)
		}
		r.subs = append(r.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		r.close()
		return nil, fmt.Errorf("subscribe events: %w", err)
	}
	return r, nil
}

func (r *runEvents) close() {
	for _, s := range r.subs {
		_ = s.Unsubscribe()
	}
}

// startsBy returns the runs started per orchestrator id.
func (r *runEvents) startsBy() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.starts))
	for k, v := range r.starts {
		m[k] = v
	}
	return m
}

// resumedBy returns the resumption of the run of session, if seen.
func (r *runEvents) resumedBy(session, run string) (resumption, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.resumed[session+"/"+run]
	return res, ok
}

// toolStarted reports whether a tool.start of call id was seen.
func (r *runEvents) toolStarted(call string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tools[call]
	return ok
}
