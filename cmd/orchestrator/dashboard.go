package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/httpauth"
)

// startDashboard serves the dashboard at / of the --http listener, on the
// orchestrator's NATS connection, once the orchestrator has created the
// event stream it replays from.
func (m *Main) startDashboard(ctx context.Context) error {
	if m.http == nil || !m.Dashboard {
		return nil
	}
	subjects, err := bus.NewSubjects(m.Prefix)
	if err != nil {
		return err
	}
	m.dash, err = dashboard.Open(ctx, m.nc, subjects, dashboard.Options{Config: dashboard.Config{
		Logger: m.logger, TraceURL: m.TraceURL, Traces: m.traces(), Limits: m.DashLimits,
		CanAct:   func(r *http.Request) bool { return httpauth.RoleOf(r) == httpauth.Writer },
		LoggedIn: httpauth.LoggedIn,
	}})
	if err != nil {
		if ctx.Err() != nil {
			// A signal came while the dashboard started: the orchestrator
			// stops as it would have a moment later, without one.
			return nil
		}
		return fmt.Errorf("--dashboard: %w", err)
	}
	m.http.Handle("/", m.dash)
	m.logger.Info("dashboard", "url", "http://"+m.http.Addr()+"/", "actions", !m.dash.ReadOnly())
	return nil
}
