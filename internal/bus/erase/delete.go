package erase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Deleter deletes sessions. Subjects and JS are required.
type Deleter struct {
	Subjects bus.Subjects
	NC       *bus.Conn
	JS       jetstream.JetStream
	// Objects is the fleet's object store; nil: none (no object is
	// deleted).
	Objects *objref.Store
	// Members returns the orchestrators alive now; the stop waits for the
	// answer of each, up to StopWait. Nil: it waits for the first answer.
	Members func() []string
	// StopWait bounds the wait for the orchestrators' answers to the
	// stop; default 3s. A member that is dead but whose lease has not
	// ended yet costs the whole wait.
	StopWait time.Duration
	// Settle is how long an orchestrator may go on with the session after
	// it lost it, not knowing yet: the partitions' lease TTL. Such an
	// orchestrator is no member, so the stop does not wait for it, and its
	// events are no history append that the store fences: when the first
	// purge removed anything, the delete waits Settle, then purges again
	// what came meanwhile (Deleted.Late). 0: no second purge.
	Settle time.Duration
	// Self names the orchestrator in the delete lease (lease.go);
	// Replicas is the lease bucket's (default 1).
	Self     string
	Replicas int
}

// purgeRounds bounds how many times a target is purged while it still
// holds messages of the session (late events of an owner that stopped).
const purgeRounds = 3

// Delete stops the session wherever it is held, then purges its messages
// from every stream (Targets) and deletes its objects. A session that
// does not exist is deleted with zero counts. A stream that does not
// exist holds nothing.
func (d *Deleter) Delete(ctx context.Context, agent, session string) (*Deleted, error) {
	for _, c := range []struct{ what, v string }{{"agent", agent}, {"session", session}} {
		if err := bus.CheckToken(c.what, c.v); err != nil {
			return nil, err
		}
	}
	out := &Deleted{Agent: agent, Session: session, Messages: map[string]uint64{}}
	// One delete of a session at a time: it holds the lease for its stop,
	// purges and settle, with room to spare.
	l, err := acquire(ctx, d.JS, d.Replicas, agent, session, d.Self, d.stopWait()+2*d.Settle+15*time.Second)
	if err != nil {
		return nil, err
	}
	defer l.release(context.WithoutCancel(ctx))
	var runs []string
	if d.NC != nil {
		if out.Stopped, out.Unanswered, runs, err = d.stop(ctx, agent, session, d.inputSeq(ctx)); err != nil {
			return nil, err
		}
	}
	var purged uint64
	for _, t := range Targets(d.Subjects, agent, session) {
		n, err := d.purge(ctx, l, t)
		if err != nil {
			return nil, err
		}
		out.Messages[t.Stream] = n
		purged += n
	}
	if d.NC != nil {
		// Again, with what the input stream holds now: a delivery an
		// orchestrator held in its buffer through the first stop, and the
		// session it loaded for it, are refused and stopped now. Not once
		// another delete took over: what the stream holds now may be
		// input sent after that delete answered.
		if err := l.check(ctx); err != nil {
			return nil, err
		}
		again, _, more, err := d.stop(ctx, agent, session, d.inputSeq(ctx))
		if err != nil {
			return nil, err
		}
		for _, o := range again {
			if !slices.Contains(out.Stopped, o) {
				out.Stopped = append(out.Stopped, o)
			}
		}
		runs = append(runs, more...)
	}
	if purged > 0 && d.Settle > 0 {
		if out.Late, err = d.settle(ctx, l, agent, session); err != nil {
			return nil, err
		}
	}
	if d.Objects != nil {
		// The stopped runs' calls may still be on workers: whatever they
		// store after the sweep below, their workers delete.
		if err := d.Objects.MarkErased(ctx, agent, session, runs); err != nil {
			return nil, err
		}
		if out.Objects, err = d.Objects.DeleteSession(ctx, agent, session); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stop asks every orchestrator to stop the session, and waits for the
// members' answers (or StopWait). An orchestrator that answers with an
// error fails the delete: it holds the session and could not stop it.
func (d *Deleter) stop(ctx context.Context, agent, session string, inputSeq uint64) (stopped, unanswered, runs []string, err error) {
	wait := d.stopWait()
	inbox := d.NC.NewRespInbox()
	sub, err := d.NC.SubscribeSync(inbox)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("stop session %s: %w", session, err)
	}
	defer sub.Unsubscribe()
	body, _ := json.Marshal(StopRequest{InputSeq: inputSeq})
	if err := d.NC.PublishRequest(StopSubject(d.Subjects, agent, session), inbox, body); err != nil {
		return nil, nil, nil, fmt.Errorf("stop session %s: %w", session, err)
	}
	var members []string
	if d.Members != nil {
		members = d.Members()
	}
	answered := map[string]bool{}
	deadline := time.Now().Add(wait)
	for {
		if len(members) > 0 && len(Unanswered(members, answered)) == 0 {
			break
		}
		if len(members) == 0 && len(answered) > 0 {
			break
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if ctx.Err() != nil {
			break
		}
		m, err := sub.NextMsg(left)
		if errors.Is(err, nats.ErrTimeout) {
			break
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("stop session %s: %w", session, err)
		}
		var rep StopReply
		if json.Unmarshal(m.Data, &rep) != nil || rep.Orchestrator == "" {
			continue
		}
		if rep.Error != "" {
			return nil, nil, nil, fmt.Errorf("orchestrator %s could not stop session %s: %s", rep.Orchestrator, session, rep.Error)
		}
		answered[rep.Orchestrator] = true
		if rep.Held {
			stopped = append(stopped, rep.Orchestrator)
			runs = append(runs, rep.Runs...)
		}
	}
	if ctx.Err() != nil {
		return nil, nil, nil, fmt.Errorf("stop session %s: %w", session, context.Cause(ctx))
	}
	return stopped, Unanswered(members, answered), runs, nil
}

// inputSeq returns the input stream's last sequence, 0 when it cannot
// tell (no stream: no input to refuse).
func (d *Deleter) inputSeq(ctx context.Context) uint64 {
	str, err := d.JS.Stream(ctx, d.Subjects.StreamName("INPUT"))
	if err != nil {
		return 0
	}
	return str.CachedInfo().State.LastSeq
}

// stopWait is StopWait or its default.
func (d *Deleter) stopWait() time.Duration {
	if d.StopWait > 0 {
		return d.StopWait
	}
	return 3 * time.Second
}

// settle waits Settle, then purges again what was published of the
// session since the first purge, and returns what it removed (nil: none).
func (d *Deleter) settle(ctx context.Context, l *lease, agent, session string) (map[string]uint64, error) {
	t := time.NewTimer(d.Settle)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, fmt.Errorf("delete of session %s: waiting for orchestrators that lost it: %w", session, context.Cause(ctx))
	}
	var late map[string]uint64
	for _, tg := range Targets(d.Subjects, agent, session) {
		n, err := d.purge(ctx, l, tg)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			if late == nil {
				late = map[string]uint64{}
			}
			late[tg.Stream] = n
		}
	}
	return late, nil
}

// purge removes the session's messages from t's stream and returns how
// many it removed; it purges again while the stream still holds some
// (published late by an owner on its way out), up to purgeRounds.
func (d *Deleter) purge(ctx context.Context, l *lease, t Target) (uint64, error) {
	str, err := d.JS.Stream(ctx, t.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", t.Stream, err)
	}
	var total uint64
	for range purgeRounds {
		n, err := count(ctx, str, t.Filter)
		if err != nil {
			return total, fmt.Errorf("stream %s: count %s: %w", t.Stream, t.Filter, err)
		}
		if n == 0 {
			return total, nil
		}
		if err := l.check(ctx); err != nil {
			return total, err
		}
		if err := str.Purge(ctx, jetstream.WithPurgeSubject(t.Filter)); err != nil {
			return total, fmt.Errorf("stream %s: purge %s: %w", t.Stream, t.Filter, err)
		}
		total += n
	}
	return total, nil
}

// count returns how many messages of filter the stream holds.
func count(ctx context.Context, str jetstream.Stream, filter string) (uint64, error) {
	info, err := str.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}
