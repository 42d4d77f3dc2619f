// Package observe follows the fleet while the harness drives it: the
// owners of the session partitions (a watch of the partition table) and
// who started and resumed which run (the runs' events of agent Agent).
// The scale harness of internal/chaos judges membership changes with it.
// It imports the NATS client, internal/bus and internal/chaos/proc.
package observe

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
)

// Agent is the agent whose runs' events RunEvents records.
const Agent = "default"

// RunEvents records, from the core NATS events of agent "default", who
// started each run (run.start), who resumed which run (run.resumed) and
// when each tool call began (tool.start).
type RunEvents struct {
	subs []*nats.Subscription

	mu      sync.Mutex
	starts  map[string]int // orchestrator id → runs started
	resumed map[string]Resumption
	tools   map[string]time.Time // tool call id → first tool.start
}

// Resumption is one run.resumed event: who, and when it arrived.
type Resumption struct {
	Orchestrator string
	At           time.Time
}

// SubscribeRunEvents subscribes the events it records and flushes, so that
// every event published afterwards is seen.
func SubscribeRunEvents(nc *nats.Conn) (*RunEvents, error) {
	r := &RunEvents{starts: map[string]int{}, resumed: map[string]Resumption{}, tools: map[string]time.Time{}}
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
				r.resumed[key] = Resumption{Orchestrator: e.Orchestrator, At: now}
			}
		case agentfleet.EventToolStart:
			if _, ok := r.tools[e.ToolCallID]; !ok {
				r.tools[e.ToolCallID] = now
			}
		}
	}
	prefix := "agent.events." + Agent + ".*."
	for _, s := range []string{"run.start", "run.resumed", "tool.start"} {
		sub, err := nc.Subscribe(prefix+s, handle)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("subscribe events: %w", err)
		}
		r.subs = append(r.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		r.Close()
		return nil, fmt.Errorf("subscribe events: %w", err)
	}
	return r, nil
}

func (r *RunEvents) Close() {
	for _, s := range r.subs {
		_ = s.Unsubscribe()
	}
}

// StartsBy returns the runs started per orchestrator id.
func (r *RunEvents) StartsBy() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.starts))
	for k, v := range r.starts {
		m[k] = v
	}
	return m
}

// ResumedBy returns the resumption of the run of session, if seen.
func (r *RunEvents) ResumedBy(session, run string) (Resumption, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.resumed[session+"/"+run]
	return res, ok
}

// ToolStarted reports whether a tool.start of call id was seen.
func (r *RunEvents) ToolStarted(call string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tools[call]
	return ok
}
