package main

// fork copies a session's records up to a point into a new session
// (history.go prints them).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
)

func checkFork(m *Main, pos []string) error {
	if len(pos) != 3 {
		return fmt.Errorf("want <agent> <session> <new-session>, got %d argument(s)", len(pos))
	}
	for i, what := range []string{"agent", "session", "new session"} {
		if err := checkName(what, pos[i]); err != nil {
			return err
		}
	}
	if m.At != 0 && m.BeforeRun != "" {
		return errors.New("give --at or --before-run, not both")
	}
	return nil
}

// fork asks an orchestrator to fork a session (agent.fork).
func (m *Main) fork(ctx context.Context) error {
	req := timetravel.Request{NewSession: m.pos[2], Point: timetravel.Point{AtSeq: m.At, BeforeRun: m.BeforeRun}}
	f, err := m.requestFork(ctx, m.pos[0], m.pos[1], req)
	if err != nil {
		return err
	}
	if m.JSON {
		return json.NewEncoder(m.Stdout).Encode(f)
	}
	fmt.Fprintf(m.Stdout, "forked %s of %s into %s: %d records up to %d, then the forked record (%d)\n", f.Source, f.Agent, m.pos[2], f.Records, f.AtSeq, f.LastSeq)
	return nil
}

// requestFork sends a fork request for session of agent and returns what
// was forked, or the orchestrator's refusal.
func (m *Main) requestFork(ctx context.Context, agent, session string, req timetravel.Request) (*timetravel.Forked, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	data, err := m.conn.Request(ctx, timetravel.Subject(m.subjects, agent, session), b, m.timeout(30*time.Second))
	if err != nil {
		return nil, err
	}
	var rep timetravel.Reply
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("the fork reply is not JSON: %w", err)
	}
	if rep.Error != "" {
		return nil, errors.New(rep.Error)
	}
	if rep.Forked == nil {
		return nil, errors.New("the fork reply says nothing")
	}
	return rep.Forked, nil
}

// timeout is --timeout, or def when it is not set.
func (m *Main) timeout(def time.Duration) time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return def
}

// deniedOr returns the server's refusal when that is what ended ctx, else
// err.
func (m *Main) deniedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			return cause
		}
	}
	return err
}
