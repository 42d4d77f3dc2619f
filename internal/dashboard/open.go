package dashboard

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	busclient "github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
)

// Options are what a command chooses for the dashboard it opens on a NATS
// connection.
type Options struct {
	// ReadOnly hides the actions whatever the NATS user may do. Without
	// it, Open probes whether the user may publish messages and aborts
	// (bus.SessionClient.CanAct) and hides them when it may not.
	ReadOnly bool
	// The rest is as in Config.
	MaxRuns int
	Since   time.Duration
	Config  Config
}

// Open returns the dashboard of the fleet of subjects on nc: events from
// bus.EventFeed (replayed from the event stream when the user may read
// it), actions through bus.SessionClient, the fleet from bus.FleetStatus.
func Open(ctx context.Context, nc *bus.Conn, subjects bus.Subjects, opts Options) (*Handler, error) {
	cfg := opts.Config
	cfg.Feed = events.OpenEventFeed(ctx, nc, subjects)
	if opts.MaxRuns > 0 {
		cfg.MaxRuns = opts.MaxRuns
	}
	if opts.Since > 0 {
		cfg.Since = opts.Since
	}
	if !opts.ReadOnly {
		sc := busclient.NewSessionClient(nc, subjects)
		ok, err := sc.CanAct()
		if err != nil {
			return nil, fmt.Errorf("dashboard: %w", err)
		}
		if ok {
			cfg.Sessions = sc
		}
	}
	cfg.Fleet = func(ctx context.Context) ([]fleet.WorkerStatus, error) {
		return fleet.FleetStatus(ctx, nc, subjects, 500*time.Millisecond)
	}
	cfg.History = func(ctx context.Context, agent, session string, req busclient.HistoryRequestJSON) (*busclient.HistoryReplyJSON, error) {
		return busclient.History(ctx, nc, subjects, agent, session, req)
	}
	// Files of results, when the user may read the bucket; none else.
	octx, cancel := context.WithTimeout(ctx, time.Second)
	if st, err := objref.OpenOn(octx, nc, objref.Config{}); err == nil {
		cfg.Objects = st
	}
	cancel()
	return New(ctx, cfg)
}
