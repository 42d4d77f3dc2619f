// Package microsvc is a worker's NATS micro service: its endpoints, their
// stats, and the answers to $SRV.PING, $SRV.INFO and $SRV.STATS in micro's
// protocol, each sent only where the reply guard allows.
//
// It imports the NATS client and its micro types, and internal/bus for
// the reply guard and tokens; nothing else of the fleet. Its tests run
// through the tool server that serves on it (internal/bus/toolrpc).
package microsvc

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"
)

// Service is a worker's NATS micro service: its endpoints, and the answers
// to $SRV.PING, $SRV.INFO and $SRV.STATS in micro's protocol (the types of
// package micro), so that `nats micro`, discovery and dashboards see it as
// micro's own. It speaks the protocol itself rather than through
// micro.AddService because micro answers those requests on whatever reply
// subject they carry, with the worker's rights: a client allowed to ask
// $SRV.INFO could have every worker publish its info on a KV key, a stream
// or a session's subjects. Every answer here goes through a ReplyGuard.
type Service struct {
	nc          *nats.Conn
	identity    micro.ServiceIdentity
	description string
	queue       string
	replies     bus.ReplyGuard
	statsData   func() any // the data of every endpoint's stats
	started     time.Time
	log         *slog.Logger
	refused     *RateLog // requests whose reply the guard refused

	mu        sync.Mutex
	endpoints []*Endpoint
	subs      []*nats.Subscription // verbs, then endpoints
	stopped   bool

	// gate is held (read) by every control answer while it is built and
	// sent, and taken by stop: once stop returns, no answer goes out, so
	// the worker's "left" notice, published after stop, is the last
	// thing discovery hears from it.
	gate      sync.RWMutex
	answering bool
}

// Endpoint is one endpoint of a service; stats under service.mu.
type Endpoint struct {
	mu    *sync.Mutex // the service's
	info  micro.EndpointInfo
	stats micro.EndpointStats
	ended int // the requests Record counted
}

// begin counts a request as it arrives, so that the stats count the calls
// still running too.
func (e *Endpoint) begin() {
	e.mu.Lock()
	e.stats.NumRequests++
	e.mu.Unlock()
}

// Record counts what one request that took d from its receipt to its
// answer spent, and the error it was answered with ("" for none). A call
// that runs on after its handler returned is recorded when it ends, so
// that the processing time of `nats micro stats` covers the call; the
// average is over the requests that ended.
func (e *Endpoint) Record(d time.Duration, errDesc string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended++
	e.stats.ProcessingTime += d
	e.stats.AverageProcessingTime = e.stats.ProcessingTime / time.Duration(e.ended)
	if errDesc != "" {
		e.stats.NumErrors++
		e.stats.LastError = errDesc
	}
}

// Config configures New.
type Config struct {
	Name, Version, Description, QueueGroup string
	Metadata                               map[string]string
	Replies                                bus.ReplyGuard
	StatsData                              func() any
	Logger                                 *slog.Logger
	Refused                                *RateLog
}

// New subscribes the control subjects of a service named cfg.Name
// (a micro name: letters, digits, '-' and '_') with a new instance id.
func New(nc *nats.Conn, cfg Config) (*Service, error) {
	if !bus.ValidToken(cfg.Name) {
		return nil, fmt.Errorf("service name %q may hold only letters, digits, '-' and '_'", cfg.Name)
	}
	s := &Service{
		nc: nc, description: cfg.Description, queue: cfg.QueueGroup, replies: cfg.Replies,
		statsData: cfg.StatsData, started: time.Now().UTC(), log: cfg.Logger, refused: cfg.Refused, answering: true,
		identity: micro.ServiceIdentity{Name: cfg.Name, ID: nuid.Next(), Version: cfg.Version, Metadata: cfg.Metadata},
	}
	if s.identity.Metadata == nil {
		s.identity.Metadata = map[string]string{}
	}
	for _, verb := range []micro.Verb{micro.PingVerb, micro.InfoVerb, micro.StatsVerb} {
		for _, sub := range [][2]string{{"", ""}, {cfg.Name, ""}, {cfg.Name, s.identity.ID}} {
			subject, err := micro.ControlSubject(verb, sub[0], sub[1])
			if err != nil {
				return nil, errors.Join(err, s.Stop())
			}
			verb := verb
			ns, err := nc.Subscribe(subject, func(m *nats.Msg) { s.control(verb, m) })
			if err != nil {
				return nil, errors.Join(fmt.Errorf("subscribe %s: %w", subject, err), s.Stop())
			}
			s.subs = append(s.subs, ns)
		}
	}
	return s, nil
}

// control answers one control request.
func (s *Service) control(verb micro.Verb, m *nats.Msg) {
	s.gate.RLock()
	defer s.gate.RUnlock()
	if !s.answering || !s.answerable(m) {
		return
	}
	var v any
	switch verb {
	case micro.PingVerb:
		v = micro.Ping{ServiceIdentity: s.identity, Type: micro.PingResponseType}
	case micro.InfoVerb:
		v = s.info()
	case micro.StatsVerb:
		v = s.stats()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	if err := m.Respond(b); err != nil {
		s.log.Warn("answer "+verb.String(), "err", err)
	}
}

// answerable reports whether m's reply subject may be answered, counting
// and (at most once a second) logging a refusal.
func (s *Service) answerable(m *nats.Msg) bool {
	err := s.replies.Check(m.Reply)
	if err == nil {
		return true
	}
	if m.Reply != "" {
		if warn, n := s.refused.Count(); warn {
			s.log.Warn("refused a request; not answered", "subject", m.Subject, "err", err, "refused_so_far", n)
		}
	}
	return false
}

// AddEndpoint subscribes subject in the service's queue group, and direct
// (if not "") alone; handle runs for each request on the subscription's
// goroutine. When it answered the request itself, it returns the error it
// answered with, if any, for the endpoint's stats; when it handed the
// request to work that goes on after it returns, it says so (async) and
// that work calls e.Record when it ends.
func (s *Service) AddEndpoint(name, subject, direct string, metadata map[string]string, handle func(m *nats.Msg, e *Endpoint) (answeredErr string, async bool)) error {
	e := &Endpoint{mu: &s.mu, info: micro.EndpointInfo{Name: name, Subject: subject, QueueGroup: s.queue, Metadata: metadata}}
	e.stats.Name, e.stats.Subject, e.stats.QueueGroup = name, subject, s.queue
	handler := func(m *nats.Msg) {
		start := time.Now()
		e.begin()
		if errDesc, async := handle(m, e); !async {
			e.Record(time.Since(start), errDesc)
		}
	}
	sub, err := s.nc.QueueSubscribe(subject, s.queue, handler)
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", subject, err)
	}
	s.mu.Lock()
	s.endpoints = append(s.endpoints, e)
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	if direct == "" {
		return nil
	}
	// Its own subscription: the requests of both may reach handle at once.
	if sub, err = s.nc.Subscribe(direct, handler); err != nil {
		return fmt.Errorf("subscribe %s: %w", direct, err)
	}
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	return nil
}

func (s *Service) info() micro.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	eps := make([]micro.EndpointInfo, len(s.endpoints))
	for i, e := range s.endpoints {
		eps[i] = e.info
	}
	return micro.Info{ServiceIdentity: s.identity, Type: micro.InfoResponseType, Description: s.description, Endpoints: eps}
}

func (s *Service) stats() micro.Stats {
	var data json.RawMessage
	if s.statsData != nil {
		data, _ = json.Marshal(s.statsData())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	eps := make([]*micro.EndpointStats, len(s.endpoints))
	for i, e := range s.endpoints {
		st := e.stats
		st.Data = data
		eps[i] = &st
	}
	return micro.Stats{ServiceIdentity: s.identity, Type: micro.StatsResponseType, Started: s.started, Endpoints: eps}
}

// Stop drains every subscription: requests already received still reach
// their handlers, but control requests are no longer answered. It may be
// called more than once.
func (s *Service) Stop() error {
	s.gate.Lock()
	s.answering = false
	s.gate.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	for _, sub := range s.subs {
		if err := sub.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			errs = append(errs, fmt.Errorf("drain %s: %w", sub.Subject, err))
		}
	}
	return errors.Join(errs...)
}

// ID returns the service's instance id.
func (s *Service) ID() string { return s.identity.ID }

// RateLog counts events and lets one warning through per second.
type RateLog struct {
	n    atomic.Uint64
	last atomic.Int64 // unix nanoseconds of the last warning
}

// Count counts one event and reports whether to warn about it, with the
// count so far.
func (l *RateLog) Count() (warn bool, n uint64) {
	n = l.n.Add(1)
	now := time.Now().UnixNano()
	last := l.last.Load()
	return now-last >= int64(time.Second) && l.last.CompareAndSwap(last, now), n
}

// N returns the events counted.
func (l *RateLog) N() uint64 { return l.n.Load() }
