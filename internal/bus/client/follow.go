package client

import (
	"sync"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
)

// FollowEvents subscribes subject (an events subject or wildcard) and passes
// each event that decodes to onEvent, one at a time, until the returned stop
// is called; once stop returns, onEvent is not called again. The
// subscription is in place on the server when FollowEvents returns.
func FollowEvents(nc *bus.Conn, subject string, onEvent func(*agentfleet.Event)) (stop func(), err error) {
	var mu sync.Mutex
	stopped := false
	end, _, err := followEvents(nc, subject, func(e *agentfleet.Event) {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			onEvent(e)
		}
	}, func(*agentfleet.Event) bool { return false })
	if err != nil {
		return nil, err
	}
	return func() {
		end()
		mu.Lock()
		stopped = true
		mu.Unlock()
	}, nil
}
