package limiter

import (
	"context"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/quota"
)

// model is one model's queue of waiting calls in this orchestrator, and
// the goroutine (pump) that offers its head to the shared state.
type model struct {
	l    *Limiter
	name string
	key  string
	lim  quota.Limits
	kick chan struct{}

	mu sync.Mutex
	q  quota.Queue[*waiter]
}

// waiter is one call waiting in a queue.
type waiter struct {
	ctx   context.Context
	call  quota.Call
	rank  int
	lease string
	since time.Time
	// ready receives nil when the call is granted (by the pump), once.
	ready    chan struct{}
	notified bool // its model.waiting event went out
	granted  bool // the pump took it out of the queue to grant it
}

func (m *model) admit(ctx context.Context, c quota.Call) (quota.Ticket, error) {
	w := &waiter{ctx: ctx, call: c, rank: quota.Rank(c.Priority), lease: newLease(m.l.cfg.Node), since: time.Now(), ready: make(chan struct{})}
	m.mu.Lock()
	m.q.Push(c.Priority, c.Agent, w)
	head, _, _ := m.q.Peek()
	m.observeLocked()
	m.mu.Unlock()
	if head == w {
		select {
		case m.kick <- struct{}{}:
		default:
		}
	}
	select {
	case <-w.ready:
		if o := m.l.cfg.Observer; o != nil {
			o.Waited(quota.RankName(w.rank), time.Since(w.since))
		}
		return m.ticket(w), nil
	case <-ctx.Done():
	case <-m.l.ctx.Done():
	}
	m.mu.Lock()
	removed := m.q.Remove(func(x *waiter) bool { return x == w })
	granted := w.granted
	m.observeLocked()
	m.mu.Unlock()
	if !removed && granted {
		// Granted as it gave up: give the grant back.
		<-w.ready
		m.ticket(w).Done(nil, 0, 0)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, ErrClosed
}

// observeLocked reports the queue's depth per priority.
func (m *model) observeLocked() {
	if o := m.l.cfg.Observer; o != nil {
		for r := range quota.Ranks {
			o.Queued(quota.RankName(r), m.q.LenRank(r))
		}
	}
}

// pump offers the head of the queue to the shared state until it is
// granted, then the next, until the limiter closes.
func (m *model) pump() {
	defer m.l.wg.Done()
	ctx := m.l.ctx
	for {
		m.mu.Lock()
		w, rank, ok := m.q.Peek()
		more := rank == 0 && m.q.LenRank(0) > 1
		m.mu.Unlock()
		if !ok {
			select {
			case <-m.kick:
				continue
			case <-ctx.Done():
				return
			}
		}
		if w.ctx.Err() != nil {
			// Its Admit removes it; look again once it did.
			m.mu.Lock()
			m.q.Remove(func(x *waiter) bool { return x == w })
			m.observeLocked()
			m.mu.Unlock()
			continue
		}
		ask := quota.Ask{
			Lease: w.lease, LeaseUntil: time.Now().Add(m.l.cfg.LeaseTTL).UnixNano(), Tokens: w.call.Tokens,
			Node: m.l.cfg.Node, Urgent: rank == 0, MoreUrgent: more,
		}
		var d quota.Decision
		err := m.l.cas(ctx, m.key, func(s quota.State, now int64) (quota.State, bool) {
			ask.LeaseUntil = now + int64(m.l.cfg.LeaseTTL)
			var next quota.State
			next, d = quota.Take(s, m.lim, now, ask)
			return next, d.Granted || d.Write
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			m.l.log.Warn("model quota: the shared state cannot be read or written; calls wait", "model", m.name, "err", err)
			d = quota.Decision{Wait: m.l.cfg.MaxWait, Reason: "quota_unavailable"}
		}
		if d.Granted {
			m.mu.Lock()
			// The head goes through Pop, which gives its agent's turn to
			// the next agent; a call that was overtaken meanwhile is
			// taken out where it is.
			taken := false
			if head, _, _ := m.q.Peek(); head == w {
				_, taken = m.q.Pop()
			} else {
				taken = m.q.Remove(func(x *waiter) bool { return x == w })
			}
			if taken {
				w.granted = true
				m.observeLocked()
				m.mu.Unlock()
				close(w.ready)
				continue
			}
			m.mu.Unlock()
			// It gave up between the look and the grant.
			m.ticket(w).Done(nil, 0, 0)
			continue
		}
		m.notify(d)
		t := time.NewTimer(min(max(d.Wait, time.Millisecond), m.l.cfg.MaxWait))
		select {
		case <-t.C:
		case <-m.kick:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// notify sends model.waiting, once, to each waiting call of the queue
// that has not had it: the reason is the head's.
func (m *model) notify(d quota.Decision) {
	var fresh []*waiter
	m.mu.Lock()
	m.q.Each(func(w *waiter) {
		if !w.notified {
			w.notified = true
			fresh = append(fresh, w)
		}
	})
	m.mu.Unlock()
	for _, w := range fresh {
		if w.call.Notify == nil {
			continue
		}
		w.call.Notify(&agentfleet.Event{
			Type: agentfleet.EventModelWaiting, Model: m.name, Priority: w.call.Priority, Reason: d.Reason,
			DurationMS: float64(d.Wait.Microseconds()) / 1000,
		})
	}
}

// ticket is an admitted call: its end releases its lease, corrects the
// tokens it was charged, and pauses the model on a Retry-After.
type ticket struct {
	m    *model
	w    *waiter
	stop chan struct{}
	once sync.Once
}

func (m *model) ticket(w *waiter) *ticket {
	t := &ticket{m: m, w: w, stop: make(chan struct{})}
	if m.lim.Concurrent > 0 {
		m.l.wg.Add(1)
		go t.renew()
	}
	return t
}

// renew keeps the call's concurrency lease while it is in flight.
func (t *ticket) renew() {
	defer t.m.l.wg.Done()
	every := t.m.l.cfg.LeaseTTL / 3
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			err := t.m.l.cas(t.m.l.ctx, t.m.key, func(s quota.State, now int64) (quota.State, bool) {
				return quota.Renew(s, t.m.lim, now, t.w.lease, now+int64(t.m.l.cfg.LeaseTTL)), true
			})
			if err != nil && t.m.l.ctx.Err() == nil {
				t.m.l.log.Warn("model quota: lease not renewed", "model", t.m.name, "err", err)
			}
		case <-t.stop:
			return
		case <-t.m.l.ctx.Done():
			return
		}
	}
}

// Done implements quota.Ticket.
func (t *ticket) Done(u *agentfleet.Usage, status int, retryAfter time.Duration) {
	t.once.Do(func() {
		close(t.stop)
		m := t.m
		if status == 429 && retryAfter <= 0 {
			// A 429 without Retry-After: pause a second all the same.
			retryAfter = time.Second
		}
		used := -1
		if u != nil {
			used = u.InputTokens + u.OutputTokens
			if used == 0 {
				used = u.TotalTokens
			}
		}
		if m.lim.Concurrent == 0 && (m.lim.TPM == 0 || used < 0) && retryAfter <= 0 {
			return
		}
		// Not the call's context: it may be canceled, and the lease
		// must go all the same.
		ctx, cancel := context.WithTimeout(m.l.ctx, 5*time.Second)
		defer cancel()
		err := m.l.cas(ctx, m.key, func(s quota.State, now int64) (quota.State, bool) {
			s = quota.Release(s, m.lim, now, t.w.lease, t.w.call.Tokens, used)
			if retryAfter > 0 {
				s = quota.Pause(s, m.lim, now, now+int64(retryAfter))
			}
			return s, true
		})
		if err != nil && m.l.ctx.Err() == nil {
			m.l.log.Warn("model quota: a call's end not recorded", "model", m.name, "err", err)
		}
		if retryAfter > 0 {
			m.l.log.Info("model quota: the provider asked to wait; the fleet pauses the model", "model", m.name, "status", status, "retry_after", retryAfter)
		}
	})
}
