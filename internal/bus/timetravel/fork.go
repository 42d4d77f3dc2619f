package timetravel

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/google/uuid"
)

// ErrExists is wrapped by the refusal of a fork into a session that holds
// records already.
var ErrExists = errors.New("the new session exists")

// Forked is what a fork did: the forked record it wrote (which names the
// source, the point and how many records were copied), and the stream
// sequence of the new session's last stored message.
type Forked struct {
	history.Forked
	LastSeq uint64 `json:"last_seq"`
}

// Fork creates session req.NewSession of agent with the records of
// session src up to req.Point (Cut), followed by a forked record that
// names req.Model, if any (whether the agent may use it is the caller's
// to check: Config.Model). src is only read. The new session must hold no
// record: the first append expects it empty, so that a fork into a session
// that exists, or that is written meanwhile, is refused (ErrExists); a
// fork that loses that race after its first append stops with
// history.ErrFenced, leaving the records it stored.
func Fork(ctx context.Context, store *history.Store, agent, src string, req Request) (*Forked, error) {
	dst, p := req.NewSession, req.Point
	for _, c := range []struct{ what, v string }{{"agent", agent}, {"session", src}, {"new session", dst}} {
		if err := bus.CheckToken(c.what, c.v); err != nil {
			return nil, err
		}
	}
	if src == dst {
		return nil, fmt.Errorf("fork of session %s into itself: %w", src, ErrExists)
	}
	from, err := store.Load(ctx, agent, src)
	if err != nil {
		return nil, err
	}
	if from.LastSeq == 0 {
		return nil, fmt.Errorf("session %s of agent %s holds no records", src, agent)
	}
	n, err := Cut(from.Records, p)
	if err != nil {
		return nil, fmt.Errorf("fork of session %s: %w", src, err)
	}
	to, err := store.Load(ctx, agent, dst)
	if err != nil {
		return nil, err
	}
	if to.LastSeq != 0 {
		return nil, fmt.Errorf("fork into session %s: %w (its last record is %d)", dst, ErrExists, to.LastSeq)
	}
	at := p.AtSeq
	if n > 0 {
		at = from.Records[n-1].Seq
	}
	out := &Forked{Forked: history.Forked{Agent: agent, Source: src, AtSeq: at, BeforeRun: p.BeforeRun, Records: n, Model: req.Model}}
	w := store.Writer(agent, dst, 0, ownership.Unfenced, ownership.Fence{})
	for _, r := range from.Records[:n] {
		if k := r.Retained; k != nil {
			// A cut of the source by its bounds: its summary and handoff
			// hold for the copy, its sequence does not.
			c := *k
			c.FirstSeq, r.Retained = 0, &c
		}
		if err := w.Buffer(ctx, r); err != nil {
			return nil, exists(dst, err)
		}
	}
	rec := out.Forked
	if err := w.Buffer(ctx, history.Record{RunID: "fork-" + uuid.NewString(), Forked: &rec}); err != nil {
		return nil, exists(dst, err)
	}
	if out.LastSeq, err = w.Flush(ctx); err != nil {
		return nil, exists(dst, err)
	}
	return out, nil
}

// exists turns the fencing of the first append into ErrExists.
func exists(dst string, err error) error {
	if errors.Is(err, history.ErrFenced) {
		return fmt.Errorf("fork into session %s: %w: %w", dst, ErrExists, err)
	}
	return fmt.Errorf("fork into session %s: %w", dst, err)
}
