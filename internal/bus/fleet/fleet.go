package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/slots"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// FleetConfig configures a Fleet watcher. The zero value means the
// documented defaults.
type FleetConfig struct {
	// Interval between discovery rounds; default 10s. Rounds find workers
	// that do not beat, and keep them listed.
	Interval time.Duration
	// Wait bounds the wait for the first answer of the round that
	// WatchFleet and Refresh make; default 500ms.
	Wait time.Duration
	// Window is how long a round, and a question to one worker, take
	// answers; default 3s. Late answers are used whenever they come.
	Window time.Duration
	// Misses is how many beat intervals a worker that beats may stay
	// silent before its tools are removed; default 3.
	Misses int
	// OnChange is called after a change of the tool set, with the tools
	// sorted by name. Calls are serialised and always carry the latest
	// state.
	OnChange func(tools []agentfleet.ToolDef)
	// OnCapacity, if set, is called after the first refresh and after every
	// change of the fleet's capacity, with the Concurrency of each tool
	// (see Capacity); typically ToolClient.SetCapacity.
	OnCapacity func(caps map[string]int)
	// OnWorkers, if set, is called after the first refresh and after every
	// change of the workers that take calls on their own subjects
	// (MetaDirect), with those of each tool and the concurrency they
	// declare; typically ToolClient.SetWorkers. Workers refused for a
	// tool (see Rank) are not among them.
	OnWorkers func(offers map[string][]slots.Offer)
	// OnSkipped, if set, is told once of each endpoint of a worker of this
	// fleet that does not describe a tool the fleet can use, with the
	// reason; it is logged either way.
	OnSkipped func(worker, endpoint string, err error)
	Logger    *slog.Logger
}

// Fleet keeps the tool set of the fleet up to date, by membership: a worker
// is added when it answers a discovery round, announces itself (joined), or
// beats; it is removed when it says it left, or when it has been silent for
// Misses beat intervals (for a worker that does not beat, two rounds and a
// window). A round with fewer answers removes nothing by itself, and
// silence while this process is cut off from NATS does not count.
type Fleet struct {
	nc       *nats.Conn
	subjects bus.Subjects
	cfg      FleetConfig
	sub      *nats.Subscription
	stopOnce sync.Once
	stopErr  error
	stop     chan struct{}
	done     chan struct{}
	ctx      context.Context // ends at Close, with the questions in flight
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	rounding atomic.Bool // a background round is in flight

	mu      sync.Mutex
	members map[string]*member
	// left holds, by instance id, when each worker said it left: an info
	// answer it sent before (a round's answers come late, for a window)
	// must not bring it back. A notice from the id lifts it, since a
	// worker stops beating before it says it left. Bounded: see maxLeft.
	left     map[string]time.Time
	asking   map[string]bool // workers a question is out to
	reported map[string]bool // skipped endpoints already reported

	notifyMu sync.Mutex // one notification at a time, always of the latest state
	tools    map[string]*FleetTool
	sig      string
	caps     map[string]int
	offers   map[string][]slots.Offer
	chosen   map[string]string
	clashes  map[string]bool // conflicts logged, by key, while they last
	ready    bool
}

// maxLeft bounds the workers a Fleet remembers as left: notices are
// small, and whoever may publish them could otherwise grow the set.
const maxLeft = 4096

// Beat defaults of workers; see ServerConfig.Beat.
const (
	DefaultBeat = time.Second
	// MinBeat and MaxBeat bound the interval a worker may announce, so that
	// a worker cannot switch its loss detection off.
	MinBeat = 100 * time.Millisecond
	MaxBeat = 10 * time.Second
)

// WatchFleet discovers the fleet once (waiting up to cfg.Wait for the first
// answer), then keeps it up to date until Close.
func WatchFleet(ctx context.Context, nc *nats.Conn, subjects bus.Subjects, cfg FleetConfig) (*Fleet, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 500 * time.Millisecond
	}
	if cfg.Window <= 0 {
		cfg.Window = 3 * time.Second
	}
	if cfg.Misses <= 0 {
		cfg.Misses = 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &Fleet{
		nc: nc, subjects: subjects, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}),
		members: map[string]*member{}, left: map[string]time.Time{}, asking: map[string]bool{}, reported: map[string]bool{},
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	var err error
	f.sub, err = nc.Subscribe(subjects.Fleet(), f.onNotice)
	if err != nil {
		return nil, fmt.Errorf("fleet: subscribe: %w", err)
	}
	if err := f.Refresh(ctx); err != nil {
		f.cancel()
		f.sub.Unsubscribe()
		f.bg.Wait()
		return nil, err
	}
	go f.watch()
	return f, nil
}

// Refresh runs a discovery round now and returns once answers stop coming
// for a moment; answers that come later are used as they come.
func (f *Fleet) Refresh(ctx context.Context) error {
	err := infoRound(ctx, f.nc, f.cfg.Wait, min(f.cfg.Wait, 100*time.Millisecond), func(info *micro.Info) { f.upsert(info, 0) })
	if err != nil {
		return err
	}
	f.publish()
	// The rest of the window, for workers that answer late.
	f.round()
	return nil
}

// round runs a discovery round in the background for the whole window. One
// runs at a time: Refresh may be called in a loop (WaitTool), and the round
// in flight already takes the late answers.
func (f *Fleet) round() {
	if !f.rounding.CompareAndSwap(false, true) {
		return
	}
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		defer f.rounding.Store(false)
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.Window)
		defer cancel()
		infoRound(ctx, f.nc, f.cfg.Window, 0, func(info *micro.Info) {
			if f.upsert(info, 0) {
				f.publish()
			}
		})
	}()
}

func (f *Fleet) watch() {
	defer close(f.done)
	rounds := time.NewTicker(f.cfg.Interval)
	defer rounds.Stop()
	expiry := time.NewTicker(min(MinBeat*2, f.cfg.Interval))
	defer expiry.Stop()
	down := false
	for {
		select {
		case <-f.stop:
			return
		case <-rounds.C:
			f.round()
		case <-expiry.C:
			if !f.nc.IsConnected() {
				down = true
				continue
			}
			if down {
				// Nobody could be heard while this process was cut off:
				// the silence so far does not count.
				down = false
				f.touchAll()
				f.round()
				continue
			}
			if f.expire() {
				f.publish()
			}
		}
	}
}

// onNotice takes a message on <prefix>.fleet: joined, beat or left.
func (f *Fleet) onNotice(msg *nats.Msg) {
	var n FleetNotice
	if err := json.Unmarshal(msg.Data, &n); err != nil || !bus.ValidToken(n.ID) {
		return
	}
	if n.Event == "left" {
		f.mu.Lock()
		_, known := f.members[n.ID]
		delete(f.members, n.ID)
		if len(f.left) < maxLeft {
			f.left[n.ID] = time.Now()
		}
		f.mu.Unlock()
		if known {
			f.publish()
		}
		return
	}
	beat := time.Duration(0)
	if n.BeatMS > 0 {
		beat = clampBeat(time.Duration(min(n.BeatMS, int64(MaxBeat/time.Millisecond))) * time.Millisecond)
	}
	f.mu.Lock()
	delete(f.left, n.ID)
	m := f.members[n.ID]
	if m != nil && sameTools(m, n.Tools) {
		m.seen = time.Now()
		if beat != 0 {
			m.beat = beat
		}
		f.mu.Unlock()
		return
	}
	if f.asking[n.ID] {
		f.mu.Unlock()
		return
	}
	f.asking[n.ID] = true
	f.mu.Unlock()
	// A worker this process does not know yet, or whose tools changed: ask
	// it for its info, giving it the whole window to answer.
	f.bg.Add(1)
	go func() {
		defer f.bg.Done()
		defer func() {
			f.mu.Lock()
			delete(f.asking, n.ID)
			f.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.Window)
		defer cancel()
		reply, err := f.nc.RequestWithContext(ctx, "$SRV.INFO."+n.Service+"."+n.ID, nil)
		if err != nil {
			f.cfg.Logger.Debug("fleet: no info from worker", "service", n.Service, "id", n.ID, "err", err)
			return
		}
		var info micro.Info
		if err := json.Unmarshal(reply.Data, &info); err != nil {
			return
		}
		if f.upsert(&info, beat) {
			f.publish()
		}
	}()
}

func sameTools(m *member, names []string) bool {
	if len(names) != len(m.tools) {
		return false
	}
	for _, n := range names {
		if _, ok := m.tools[n]; !ok {
			return false
		}
	}
	return true
}

// upsert records an info answer; beat, when not zero, is the interval the
// worker beats at. It reports whether the worker is new or changed.
func (f *Fleet) upsert(info *micro.Info, beat time.Duration) bool {
	m, skipped := memberFromInfo(info, f.subjects)
	if m == nil {
		return false
	}
	f.report(skipped)
	m.seen = time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, gone := f.left[m.id]; gone {
		return false // an answer sent before the worker left
	}
	old := f.members[m.id]
	switch {
	case beat != 0:
		m.beat = beat
	case m.beat == 0 && old != nil:
		m.beat = old.beat
	}
	f.members[m.id] = m
	return old == nil || !sameMember(old, m)
}

func sameMember(a, b *member) bool {
	return a.version == b.version && a.concurrency == b.concurrency &&
		maps.EqualFunc(a.tools, b.tools, func(x, y agentfleet.ToolDef) bool { return defKey(x) == defKey(y) })
}

// report logs, and hands to OnSkipped, each skipped endpoint once.
func (f *Fleet) report(skipped []skippedEndpoint) {
	for _, s := range skipped {
		key := s.worker + "\x00" + s.endpoint + "\x00" + s.err.Error()
		f.mu.Lock()
		seen := f.reported[key]
		f.reported[key] = true
		f.mu.Unlock()
		if seen {
			continue
		}
		f.cfg.Logger.Warn("fleet: endpoint skipped", "worker", s.worker, "endpoint", s.endpoint, "err", s.err)
		if f.cfg.OnSkipped != nil {
			f.cfg.OnSkipped(s.worker, s.endpoint, s.err)
		}
	}
}

// touchAll marks every member as heard from now.
func (f *Fleet) touchAll() {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		m.seen = now
	}
}

// expire removes the members silent for too long, and reports whether any
// was removed.
func (f *Fleet) expire() bool {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, at := range f.left {
		// Every answer sent before the worker left has come by now.
		if now.Sub(at) > 2*f.cfg.Window {
			delete(f.left, id)
		}
	}
	removed := false
	for id, m := range f.members {
		limit := 2*f.cfg.Interval + f.cfg.Window
		if m.beat > 0 {
			limit = time.Duration(f.cfg.Misses) * m.beat
		}
		if now.Sub(m.seen) > limit {
			f.cfg.Logger.Info("fleet: worker silent, its tools are removed", "worker", m.service+"/"+id, "silent", now.Sub(m.seen).Round(time.Millisecond))
			delete(f.members, id)
			removed = true
		}
	}
	return removed
}

// publish brings the tool set in line with the members and tells the
// callbacks what changed.
func (f *Fleet) publish() {
	f.notifyMu.Lock()
	defer f.notifyMu.Unlock()
	f.mu.Lock()
	tools, conflicts := resolve(f.members)
	chosen := chosenVersions(f.members, tools)
	offers := directOffers(f.members, tools)
	f.mu.Unlock()
	clashes := make(map[string]bool, len(conflicts))
	for _, c := range conflicts {
		clashes[c.key()] = true
		if f.clashes[c.key()] {
			continue
		}
		if c.refused {
			f.cfg.Logger.Warn("fleet: a worker of a lower kind serves a tool name the fleet has; it is refused: not offered, not counted (its subscription may still take calls: give workers credentials for their own tool subjects only)",
				"tool", c.tool, "kept", c.kept, "refused", c.other)
		} else {
			f.cfg.Logger.Warn("fleet: different services serve different definitions of a tool; one is offered, both take its calls",
				"tool", c.tool, "kept", c.kept, "other", c.other)
		}
	}
	sig := signature(tools)
	caps := capacities(tools)
	changed := sig != f.sig
	capsChanged := !f.ready || !maps.Equal(caps, f.caps)
	offersChanged := !f.ready || !maps.EqualFunc(offers, f.offers, slices.Equal)
	for name, c := range chosen {
		if f.chosen[name] != c {
			f.cfg.Logger.Info("fleet: workers serve different definitions of a tool; the newest version's is used", "tool", name, "version", c)
		}
	}
	f.tools, f.sig, f.caps, f.offers, f.chosen, f.clashes, f.ready = tools, sig, caps, offers, chosen, clashes, true
	if changed && f.cfg.OnChange != nil {
		f.cfg.OnChange(defsOf(tools))
	}
	if capsChanged && f.cfg.OnCapacity != nil {
		f.cfg.OnCapacity(maps.Clone(caps))
	}
	if offersChanged && f.cfg.OnWorkers != nil {
		f.cfg.OnWorkers(maps.Clone(offers))
	}
}

// directOffers returns, by tool, the workers serving it (as resolve chose
// them) that take calls on their own subjects and declare a concurrency,
// sorted by id. An id that is not one subject token ("a.b", "*", ">")
// would make that subject another one: such a worker is not offered.
// Under mu.
func directOffers(members map[string]*member, tools map[string]*FleetTool) map[string][]slots.Offer {
	out := map[string][]slots.Offer{}
	for name, t := range tools {
		for _, id := range t.Workers { // sorted
			if m := members[id]; m != nil && m.direct && m.concurrency > 0 && bus.ValidToken(id) {
				out[name] = append(out[name], slots.Offer{ID: id, Limit: m.concurrency})
			}
		}
	}
	return out
}

// Capacity returns, by tool, the calls the fleet runs at once: the sum of
// the concurrency its workers advertise, 0 when unknown.
func (f *Fleet) Capacity() map[string]int {
	f.notifyMu.Lock()
	defer f.notifyMu.Unlock()
	return maps.Clone(f.caps)
}

func capacities(found map[string]*FleetTool) map[string]int {
	caps := make(map[string]int, len(found))
	for name, t := range found {
		caps[name] = t.Concurrency
	}
	return caps
}

// Tools returns the tools of the fleet, sorted by name.
func (f *Fleet) Tools() []agentfleet.ToolDef {
	f.notifyMu.Lock()
	defer f.notifyMu.Unlock()
	return defsOf(f.tools)
}

func defsOf(tools map[string]*FleetTool) []agentfleet.ToolDef {
	out := make([]agentfleet.ToolDef, 0, len(tools))
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		out = append(out, tools[name].ToolDef)
	}
	return out
}

// Workers returns the number of workers in the fleet.
func (f *Fleet) Workers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.members)
}

// Close stops watching.
func (f *Fleet) Close() error {
	f.stopOnce.Do(func() {
		close(f.stop)
		<-f.done
		f.cancel()
		f.stopErr = f.sub.Unsubscribe()
		f.bg.Wait()
	})
	return f.stopErr
}

// signature identifies a tool set: the names and definitions, not which
// workers serve them.
func signature(found map[string]*FleetTool) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(found)) {
		d, _ := json.Marshal(found[name].ToolDef)
		b.WriteString(strconv.Itoa(len(d)))
		b.Write(d)
	}
	return b.String()
}

// FleetNotice is the JSON body of a message on <prefix>.fleet.
type FleetNotice struct {
	Event   string   `json:"event"` // joined, beat or left
	Service string   `json:"service"`
	ID      string   `json:"id"`
	Tools   []string `json:"tools,omitempty"`
	// BeatMS is the interval of the worker's beats, in milliseconds; 0 for
	// a worker that does not beat.
	BeatMS int64 `json:"beat_ms,omitempty"`
}
