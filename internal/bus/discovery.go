package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// FleetTool is a tool the fleet offers, and the workers that serve it.
type FleetTool struct {
	agentfleet.ToolDef
	Workers []string
	// Concurrency is the sum of the concurrency the Workers advertise
	// (service metadata MetaConcurrency); 0 when one of them advertises
	// none, and the fleet's capacity for the tool is unknown.
	Concurrency int
}

// Discover asks every micro service on nc for its info ($SRV.INFO) and
// returns the tools that workers of this prefix serve, by name. It waits up
// to wait for the first answer and then until answers stop coming for a
// short while.
func Discover(ctx context.Context, nc *nats.Conn, subjects Subjects, wait time.Duration) (map[string]*FleetTool, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest("$SRV.INFO", inbox, nil); err != nil {
		return nil, fmt.Errorf("discover: %w", err)
	}
	found := map[string]*FleetTool{}
	deadline := time.Now().Add(wait)
	quiet := min(wait, 100*time.Millisecond)
	for first := true; ; first = false {
		timeout := quiet
		if first {
			timeout = time.Until(deadline)
		}
		mctx, cancel := context.WithTimeout(ctx, timeout)
		m, err := sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("discover: %w", ctx.Err())
			}
			return found, nil // no more answers
		}
		if len(m.Data) == 0 {
			continue // no responders status
		}
		var info micro.Info
		if err := json.Unmarshal(m.Data, &info); err != nil {
			continue
		}
		if info.Metadata[MetaProtocol] == "" || info.Metadata["prefix"] != subjects.Prefix {
			continue // not a worker of this fleet
		}
		concurrency, err := strconv.Atoi(info.Metadata[MetaConcurrency])
		if err != nil || concurrency < 0 {
			concurrency = 0 // unknown
		}
		for _, ep := range info.Endpoints {
			name, ok := strings.CutPrefix(ep.Subject, subjects.Prefix+".tool.")
			if !ok || name != ep.Name {
				continue
			}
			if t := found[name]; t != nil {
				t.Workers = append(t.Workers, info.ID)
				if t.Concurrency > 0 && concurrency > 0 {
					t.Concurrency += concurrency
				} else {
					t.Concurrency = 0
				}
				continue
			}
			def, err := ToolFromMetadata(name, ep.Metadata)
			if err != nil {
				continue
			}
			found[name] = &FleetTool{ToolDef: def, Workers: []string{info.ID}, Concurrency: concurrency}
		}
	}
}

// FleetConfig configures a Fleet watcher.
type FleetConfig struct {
	// Interval between refreshes; default 10s. Workers that join or leave
	// announce it, so the interval only bounds how long a crashed worker's
	// tools stay listed.
	Interval time.Duration
	// Wait bounds one discovery round; default 500ms.
	Wait time.Duration
	// OnChange is called after a refresh that changed the tool set, with
	// the tools sorted by name.
	OnChange func(tools []agentfleet.ToolDef)
	// OnCapacity, if set, is called after the first refresh and after every
	// one that changed the fleet's capacity, with the Concurrency of each
	// tool (see Capacity); typically ToolClient.SetCapacity.
	OnCapacity func(caps map[string]int)
	Logger     *slog.Logger
}

// Fleet keeps the tool set of the fleet up to date: it discovers the
// workers at start, again whenever one announces itself, and periodically.
type Fleet struct {
	nc       *nats.Conn
	subjects Subjects
	cfg      FleetConfig
	sub      *nats.Subscription
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}

	mu    sync.Mutex
	tools map[string]*FleetTool
	sig   string
	caps  map[string]int
	ready bool
}

// WatchFleet discovers the fleet once, then keeps watching it until Close.
func WatchFleet(ctx context.Context, nc *nats.Conn, subjects Subjects, cfg FleetConfig) (*Fleet, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 500 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &Fleet{nc: nc, subjects: subjects, cfg: cfg, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	var err error
	f.sub, err = nc.Subscribe(subjects.Fleet(), func(*nats.Msg) {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: subscribe: %w", err)
	}
	if err := f.Refresh(ctx); err != nil {
		f.sub.Unsubscribe()
		return nil, err
	}
	go f.watch()
	return f, nil
}

func (f *Fleet) watch() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		case <-f.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Wait+time.Second)
		if err := f.Refresh(ctx); err != nil {
			f.cfg.Logger.Warn("fleet discovery", "err", err)
		}
		cancel()
	}
}

// Refresh discovers the fleet now.
func (f *Fleet) Refresh(ctx context.Context) error {
	found, err := Discover(ctx, f.nc, f.subjects, f.cfg.Wait)
	if err != nil {
		return err
	}
	sig := signature(found)
	caps := capacities(found)
	f.mu.Lock()
	changed := sig != f.sig
	capsChanged := !f.ready || !maps.Equal(caps, f.caps)
	f.tools, f.sig, f.caps, f.ready = found, sig, caps, true
	f.mu.Unlock()
	if changed && f.cfg.OnChange != nil {
		f.cfg.OnChange(f.Tools())
	}
	if capsChanged && f.cfg.OnCapacity != nil {
		f.cfg.OnCapacity(maps.Clone(caps))
	}
	return nil
}

// Capacity returns, by tool, the calls the fleet runs at once: the sum of
// the concurrency its workers advertise, 0 when unknown.
func (f *Fleet) Capacity() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
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
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]agentfleet.ToolDef, 0, len(f.tools))
	for _, name := range slices.Sorted(maps.Keys(f.tools)) {
		out = append(out, f.tools[name].ToolDef)
	}
	return out
}

// Workers returns the number of distinct workers last seen.
func (f *Fleet) Workers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := map[string]bool{}
	for _, t := range f.tools {
		for _, w := range t.Workers {
			ids[w] = true
		}
	}
	return len(ids)
}

// Close stops watching.
func (f *Fleet) Close() error {
	close(f.stop)
	<-f.done
	return errors.Join(f.sub.Unsubscribe())
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
