package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/httpauth"
)

// dashboard serves the browser dashboard on --http until ctx ends: a
// dashboard-only process, for a NATS user such as the read-only dashboard
// role of deploy/nats/nats.conf. The actions are shown only when the user
// may publish messages and aborts, and never with --read-only.
func (m *Main) dashboard(ctx context.Context) error {
	guard, err := m.HTTPAuth.Guard("--http", m.HTTP, "", false, m.logger)
	if err != nil {
		return err
	}
	d, err := dashboard.Open(ctx, m.conn.NATS(), m.subjects, dashboard.Options{ReadOnly: m.ReadOnly, Config: dashboard.Config{
		Logger: m.logger, TraceURL: m.TraceURL, Limits: m.DashLimits,
		CanAct:   func(r *http.Request) bool { return httpauth.RoleOf(r) == httpauth.Writer },
		LoggedIn: httpauth.LoggedIn,
	}})
	if err != nil {
		return err
	}
	defer d.Close()
	ln, err := net.Listen("tcp", m.HTTP)
	if err != nil {
		return fmt.Errorf("--http %s: %w", m.HTTP, err)
	}
	srv := &http.Server{Handler: guard.Wrap(d), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	m.dashAddr.Store(ln.Addr().String())
	how := "with actions"
	if d.ReadOnly() {
		how = "read only"
	}
	if guard.Protected() {
		how += ", log in with a token"
	}
	fmt.Fprintf(m.Stderr, "dashboard on http://%s/ (%s; Ctrl-C to stop)\n", ln.Addr(), how)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	d.Close() // ends the event streams, which Shutdown would wait for
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// DashboardAddr returns the address the dashboard command listens on, once
// it does; "" before.
func (m *Main) DashboardAddr() string {
	s, _ := m.dashAddr.Load().(string)
	return s
}

func checkDashboard(m *Main, pos []string) error {
	if len(pos) > 0 {
		return fmt.Errorf("want no arguments, got %d", len(pos))
	}
	return nil
}
