package quota

import (
	"math"
	"time"
)

// State is the shared state of one model's quota, as stored (JSON) under
// the model's key: the two token buckets at time At, the leases of the
// requests in flight, a provider's pause, and the orchestrators that have
// interactive calls waiting. Times are Unix nanoseconds of the clocks of
// the orchestrators that wrote them.
type State struct {
	// At is when Req and Tok were last refilled.
	At int64 `json:"at"`
	// Req is the requests the bucket holds; Tok the tokens, below zero
	// when responses used more than their requests were charged.
	Req float64 `json:"req"`
	Tok float64 `json:"tok"`
	// Held maps the lease of each request in flight to when it lapses.
	Held map[string]int64 `json:"held,omitempty"`
	// Pause is when a provider's Retry-After ends: no request goes
	// before it.
	Pause int64 `json:"pause,omitempty"`
	// Urgent maps each orchestrator that has interactive calls waiting to
	// when that lapses: while one does, the others' batch calls wait.
	Urgent map[string]int64 `json:"urgent,omitempty"`
}

// Ask is one model call that asks to go.
type Ask struct {
	// Lease names the request while it is in flight (unique in the
	// fleet); it is held until Release, or until LeaseUntil lapses.
	Lease      string
	LeaseUntil int64
	// Tokens is the request's estimated tokens, charged now and corrected
	// at Release.
	Tokens int
	// Node is the asking orchestrator; Urgent says the call is
	// interactive, and MoreUrgent that the orchestrator has more
	// interactive calls waiting after this one.
	Node       string
	Urgent     bool
	MoreUrgent bool
}

// The reasons a call waits, in model.waiting events and metrics.
const (
	ReasonRequests    = "rate_requests"
	ReasonTokens      = "rate_tokens"
	ReasonConcurrency = "concurrency"
	ReasonPaused      = "paused"
	ReasonQueued      = "queued" // behind calls of a higher priority
)

// Decision is what Take decided: the call goes, or it waits about Wait
// (0: not known; ask again soon) for Reason.
type Decision struct {
	Granted bool
	Wait    time.Duration
	Reason  string
	// Write says that the state Take returned must be stored even though
	// the call was not granted (an interactive call marked itself urgent).
	Write bool
}

// UrgentTTL is how long an urgent mark holds unless renewed: an
// orchestrator that dies with interactive calls waiting holds the others'
// batch calls back this long at most.
const UrgentTTL = 2 * time.Second

// PollWait is the wait of a call whose wait is not known (a free
// concurrency slot, an urgent mark of another orchestrator).
const PollWait = 20 * time.Millisecond

// refill returns s with its buckets refilled to now and lapsed leases and
// marks dropped. A clock behind At (another orchestrator's clock ahead)
// refills nothing and leaves At as it is, so that skew never adds tokens
// beyond a bucket's capacity.
func refill(s State, l Limits, now int64) State {
	if s.At == 0 {
		// A new key: full buckets.
		s.At, s.Req, s.Tok = now, l.ReqCap(), l.TokCap()
	}
	if d := now - s.At; d > 0 {
		s.Req = math.Min(l.ReqCap(), s.Req+float64(d)*l.reqRate())
		s.Tok = math.Min(l.TokCap(), s.Tok+float64(d)*l.tokRate())
		s.At = now
	}
	s.Held = prune(s.Held, now)
	s.Urgent = prune(s.Urgent, now)
	return s
}

// prune returns m without the entries that lapsed by now, nil when none
// is left. It copies: a State may be shared with the caller.
func prune(m map[string]int64, now int64) map[string]int64 {
	var out map[string]int64
	for k, until := range m {
		if until > now {
			if out == nil {
				out = make(map[string]int64, len(m))
			}
			out[k] = until
		}
	}
	return out
}

// Take decides whether the call a may go at now under l, given the stored
// state s, and returns the state to store. A granted call holds a request
// token, its estimated tokens and, with a concurrency limit, a lease.
// The checks go in order: a provider's pause, other orchestrators'
// interactive calls (for a batch call), concurrency, requests, tokens.
func Take(s State, l Limits, now int64, a Ask) (State, Decision) {
	s = refill(s, l, now)
	deny := func(wait time.Duration, reason string) (State, Decision) {
		d := Decision{Wait: wait, Reason: reason}
		if a.Urgent && a.Node != "" {
			if s.Urgent == nil {
				s.Urgent = map[string]int64{}
			}
			// Renewed only when half lapsed, so that waiting does not
			// write at every try.
			if s.Urgent[a.Node]-now < int64(UrgentTTL)/2 {
				s.Urgent[a.Node] = now + int64(UrgentTTL)
				d.Write = true
			}
		}
		return s, d
	}
	if s.Pause > now {
		return deny(time.Duration(s.Pause-now), ReasonPaused)
	}
	if !a.Urgent {
		for node := range s.Urgent {
			if node != a.Node {
				return deny(PollWait, ReasonQueued)
			}
		}
	}
	if l.Concurrent > 0 && len(s.Held) >= l.Concurrent {
		return deny(PollWait, ReasonConcurrency)
	}
	if l.RPM > 0 && s.Req < 1 {
		return deny(waitFor(1-s.Req, l.reqRate()), ReasonRequests)
	}
	if l.TPM > 0 {
		// A request larger than the bucket goes when the bucket is full,
		// and leaves it in debt.
		need := math.Min(float64(a.Tokens), l.TokCap())
		if s.Tok < need {
			return deny(waitFor(need-s.Tok, l.tokRate()), ReasonTokens)
		}
	}
	if l.RPM > 0 {
		s.Req--
	}
	if l.TPM > 0 {
		s.Tok -= float64(a.Tokens)
	}
	if l.Concurrent > 0 && a.Lease != "" {
		if s.Held == nil {
			s.Held = map[string]int64{}
		}
		s.Held[a.Lease] = a.LeaseUntil
	}
	if a.Urgent && !a.MoreUrgent && s.Urgent != nil {
		delete(s.Urgent, a.Node)
		if len(s.Urgent) == 0 {
			s.Urgent = nil
		}
	}
	return s, Decision{Granted: true}
}

// waitFor is the time a bucket refilling at rate per nanosecond takes to
// gain n, at least a millisecond.
func waitFor(n, rate float64) time.Duration {
	if rate <= 0 {
		return PollWait
	}
	return max(time.Duration(math.Ceil(n/rate)), time.Millisecond)
}

// Release returns the state after the call of lease ended having used
// tokens where it was charged charged: its lease is dropped, and the
// difference goes to (or comes from) the token bucket, never above its
// capacity nor below minus its capacity.
func Release(s State, l Limits, now int64, lease string, charged, used int) State {
	s = refill(s, l, now)
	if _, ok := s.Held[lease]; ok {
		delete(s.Held, lease)
		if len(s.Held) == 0 {
			s.Held = nil
		}
	}
	if l.TPM > 0 && used >= 0 {
		s.Tok = math.Max(-l.TokCap(), math.Min(l.TokCap(), s.Tok+float64(charged-used)))
	}
	return s
}

// Renew returns the state with the lease of a call still in flight held
// until until; a lease that lapsed already is taken again.
func Renew(s State, l Limits, now int64, lease string, until int64) State {
	s = refill(s, l, now)
	if l.Concurrent > 0 {
		if s.Held == nil {
			s.Held = map[string]int64{}
		}
		s.Held[lease] = until
	}
	return s
}

// Pause returns the state with no request allowed before until (a
// provider's Retry-After); a later pause stored already stays.
func Pause(s State, l Limits, now, until int64) State {
	s = refill(s, l, now)
	s.Pause = max(s.Pause, until)
	return s
}
