package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// eventStream is the stream of the fleet's events,
// bus.Subjects.StreamName("EVENTS").
const eventStream = "AGENT_EVENTS"

// erasedName names the i-th erased session: apart from the plan's s00….
func erasedName(i int) string { return fmt.Sprintf("x%02d", i) }

// isErased reports whether a session is one the load deletes.
func isErased(session string) bool { return strings.HasPrefix(session, "x") }

// newErasePlan plans cfg.Erase sessions that the load deletes: each gets
// two to four messages between the load's start and its delete, the last
// just before the delete, so that the delete often meets a run in flight,
// and one message once the delete was answered. The delete comes between
// 30% and 80% of the load's duration, while the faults go on.
func newErasePlan(cfg *Config, rng *rand.Rand) []*check.ErasedPlan {
	var out []*check.ErasedPlan
	for i := range cfg.Erase {
		name := erasedName(i)
		p := &check.ErasedPlan{Name: name, DeleteAt: cfg.Duration*3/10 + time.Duration(rng.Int64N(int64(cfg.Duration/2)+1))}
		n := 2 + rng.IntN(3)
		ats := make([]time.Duration, n)
		for k := range n - 1 {
			ats[k] = time.Duration(rng.Int64N(int64(p.DeleteAt) + 1))
		}
		ats[n-1] = max(0, p.DeleteAt-time.Duration(rng.Int64N(int64(300*time.Millisecond))))
		slices.Sort(ats)
		prev := time.Duration(0)
		for k, at := range ats {
			p.Before = append(p.Before, &check.Message{ID: fmt.Sprintf("m-%d-%s-%d", cfg.Seed, name, k), Session: name, Gap: at - prev})
			prev = at
		}
		p.After = &check.Message{ID: fmt.Sprintf("m-%d-%s-after", cfg.Seed, name), Session: name}
		out = append(out, p)
	}
	return out
}

// runErase drives the erased sessions: their messages, the delete
// (requested again until an orchestrator answers that it deleted the
// session: the one asked may be killed, paused or cut off), then the
// message after it. It returns which deletes were answered.
func runErase(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, plans []*check.ErasedPlan, logf func(string, ...any)) (map[string]bool, error) {
	sem := make(chan struct{}, publishers)
	var (
		mu      sync.Mutex
		deleted = map[string]bool{}
		wg      sync.WaitGroup
	)
	errs := make(chan error, len(plans))
	start := time.Now()
	for _, p := range plans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, m := range p.Before {
				if err := proc.Pause(ctx, m.Gap); err != nil {
					errs <- err
					return
				}
				if err := publishOne(ctx, js, sem, p.Name, m.ID, true); err != nil {
					errs <- err
					return
				}
			}
			if err := proc.Pause(ctx, p.DeleteAt-time.Since(start)); err != nil {
				errs <- err
				return
			}
			d, attempts, err := deleteSession(ctx, nc, p.Name)
			if err != nil {
				errs <- err
				return
			}
			logf("chaos: session %s deleted after %d attempt(s) by %s: %v, %d stopped, unanswered %v", p.Name, attempts, d.By, d.Messages, len(d.Stopped), d.Unanswered)
			mu.Lock()
			deleted[p.Name] = true
			mu.Unlock()
			if err := publishOne(ctx, js, sem, p.Name, p.After.ID, true); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return deleted, err
	}
	return deleted, nil
}

// deleteSession asks for the delete of a session until an orchestrator
// answers that it deleted it.
func deleteSession(ctx context.Context, nc *nats.Conn, session string) (*erase.Deleted, int, error) {
	subjects, _ := bus.NewSubjects("")
	body, _ := json.Marshal(erase.Request{Confirm: session})
	var last error
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := nc.RequestWithContext(rctx, erase.Subject(subjects, agentName, session), body)
		cancel()
		if err == nil {
			var rep erase.Reply
			if err = json.Unmarshal(m.Data, &rep); err == nil && rep.Deleted != nil {
				return rep.Deleted, attempt, nil
			}
			if err == nil {
				err = fmt.Errorf("%s", rep.Error)
			}
		}
		last = err
		if ctx.Err() != nil {
			return nil, attempt, fmt.Errorf("delete %s: %w (last: %v)", session, ctx.Err(), last)
		}
		if err := proc.Pause(ctx, time.Duration(min(attempt, 8))*250*time.Millisecond); err != nil {
			return nil, attempt, fmt.Errorf("delete %s: %w (last: %v)", session, err, last)
		}
	}
}

// quiesceErased waits until the message after each answered delete has a
// run that ended.
func (f *fleet) quiesceErased(ctx context.Context, js jetstream.JetStream, plans []*check.ErasedPlan, deleted map[string]bool, timeout time.Duration) error {
	p := &check.Plan{}
	for _, e := range plans {
		if deleted[e.Name] {
			p.Sessions = append(p.Sessions, check.ErasedSessionPlan(e))
		}
	}
	since := time.Now()
	return proc.WaitFor(ctx, timeout, "the message after each delete to have a run that ended", func() (bool, error) {
		if err := f.supervise(ctx, since); err != nil {
			return false, err
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		recs, err := readHistory(rctx, js)
		cancel()
		if err != nil {
			return false, err
		}
		if done, missing := check.Answered(p, recs); !done {
			return false, fmt.Errorf("%d messages after a delete have no ended run", missing)
		}
		return true, nil
	})
}

// readErased reads what the streams hold of each erased session: its
// history (from hist), its events and its stored input.
func readErased(ctx context.Context, js jetstream.JetStream, plans []*check.ErasedPlan, deleted map[string]bool, hist []*check.Record) (map[string]*check.ErasedState, error) {
	subjects, _ := bus.NewSubjects("")
	out := map[string]*check.ErasedState{}
	for _, p := range plans {
		st := &check.ErasedState{Deleted: deleted[p.Name]}
		for _, r := range hist {
			if r.Session == p.Name {
				st.History = append(st.History, r)
			}
		}
		err := readStream(ctx, js, eventStream, "agent.events."+agentName+"."+p.Name+".>", func(m jetstream.Msg) error {
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			var e struct {
				Type  string `json:"type"`
				RunID string `json:"run_id"`
			}
			json.Unmarshal(m.Data(), &e)
			st.Events = append(st.Events, check.StoredEvent{Seq: meta.Sequence.Stream, Type: e.Type, Run: e.RunID})
			return nil
		})
		if err != nil {
			return nil, err
		}
		if st.Input, err = storedInput(ctx, js, subjects.StoredSession(agentName, p.Name)); err != nil {
			return nil, err
		}
		out[p.Name] = st
	}
	return out, nil
}

// splitErased parts the history into the records of the sessions of the
// plan, and, per erased session, the records of the run after its delete.
func splitErased(plans []*check.ErasedPlan, hist []*check.Record) []*check.Record {
	var out []*check.Record
	for _, r := range hist {
		if !isErased(r.Session) {
			out = append(out, r)
		}
	}
	for _, p := range plans {
		var recs []*check.Record
		for _, r := range hist {
			if r.Session == p.Name {
				recs = append(recs, r)
			}
		}
		out = append(out, check.AfterRecords(p, recs)...)
	}
	return out
}

// storedInput returns the user message ids of the input stream's messages
// on filter. The stream is a work queue, which takes no ordered consumer:
// its messages are read one by one, each the next on filter.
func storedInput(ctx context.Context, js jetstream.JetStream, filter string) ([]string, error) {
	str, err := js.Stream(ctx, inputStream)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", inputStream, err)
	}
	var ids []string
	for seq := uint64(1); ; {
		m, err := str.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return ids, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s on %s: %w", inputStream, filter, err)
		}
		var u struct {
			ID string `json:"id"`
		}
		json.Unmarshal(m.Data, &u)
		ids = append(ids, u.ID)
		seq = m.Sequence + 1
	}
}
