// Package mcpbridge brings the tools of MCP servers to the fleet: a Bridge
// connects to one MCP server as an MCP client (a command on stdio, or a
// streamable HTTP endpoint), lists its tools and turns each into a fleet
// tool, which its Host serves (the worker's, on NATS), following the
// server's tools/list_changed and coming back after the server went away.
//
// It does not import the NATS client: the transport is the Host's.
package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Host serves sets of fleet tools for a Bridge: the worker's serves them
// on NATS. The bridge calls Serve with the whole set each time it
// changes, and drains the set it replaces.
type Host interface {
	// Serve starts serving tools as the tool server called name; the
	// tools take calls once it returns. It fails when they cannot be
	// served, with an error that says why.
	Serve(name string, tools []*agentfleet.Tool) (Served, error)
	// MaxPayload is the largest message the transport carries, the
	// default bound of Limits.InfoBytes; 0 or less means 1 MiB.
	MaxPayload() int64
}

// Served is one set of tools a Host serves.
type Served interface {
	// Name is the name of the tool server.
	Name() string
	// InFlight returns the calls running now.
	InFlight() int
	// Drain stops taking calls and lets those in flight finish until ctx
	// ends, then cancels them.
	Drain(ctx context.Context) error
}

// Config configures a Bridge. Spec is required; every other field is
// optional and its zero value means the documented default.
type Config struct {
	Spec Spec
	// Name is the name of the tool server the Host is asked for; default
	// "mcp-" + Spec.Name.
	Name string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Reserved names are never served, whatever the prefix: the worker
	// gives the names of all built-in tools and of the tools it serves
	// itself.
	Reserved []string
	// Claims, when set, is shared by the bridges of one worker, so that a
	// tool name is served by one of its MCP servers only.
	Claims *Claims
	// MinBackoff and MaxBackoff bound the wait before each attempt to
	// reconnect to a server that went away, doubled after every failure;
	// default 250ms and 30s.
	MinBackoff, MaxBackoff time.Duration
	// Timeout, when set, is the call timeout of every tool of the server
	// (ToolDef.TimeoutMS); default none, so the agent's or the system's.
	Timeout time.Duration
	// ConnectTimeout bounds one connection, and then its tools/list;
	// default 30s.
	ConnectTimeout time.Duration
	// Limits bound the server's tool list; the zero value means the
	// defaults (DefaultMaxTools, bus.ToolBounds, the Host's max payload).
	Limits Limits
	// Stderr receives a stdio server's standard error; default os.Stderr.
	Stderr io.Writer
	// OnChange, if set, is called with the fleet names of the tools served
	// after every change of them, once the new set takes calls.
	OnChange func(served []string)
}

// Bridge serves the tools of one MCP server. While the server is away
// its tools stay on the fleet and their calls fail with an error that
// says so, until the bridge has reconnected (restarting a stdio server).
type Bridge struct {
	host     Host
	cfg      Config
	log      *slog.Logger
	client   *mcp.Client
	reserved map[string]bool
	progress sync.Map // progress token → func(partial any)
	seq      atomic.Uint64
	changed  chan struct{}

	life context.Context
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	sess     *mcp.ClientSession
	down     error             // why there is no session
	current  Served            // nil while no tool is served
	served   map[string]string // fleet name → MCP name
	defs     map[string]agentfleet.ToolDef
	draining sync.WaitGroup
}

// Start connects to the server, serves its tools and follows it until
// Close. ctx bounds the first connection and tools/list only (each also
// bounded by Config.ConnectTimeout): a server that cannot be reached or
// started, or does not list its tools in time, fails Start with an error
// that names it; after that, the bridge reconnects by itself. host serves
// the tools, from the first listing until Close.
func Start(ctx context.Context, host Host, cfg Config) (*Bridge, error) {
	if cfg.Spec.Name == "" || (len(cfg.Spec.Command) == 0) == (cfg.Spec.URL == "") {
		return nil, fmt.Errorf("mcp bridge: spec %q needs a name and either a command or a URL", cfg.Spec)
	}
	if host == nil {
		return nil, fmt.Errorf("mcp bridge: MCP server %s has no host to serve its tools", cfg.Spec.Name)
	}
	if cfg.Name == "" {
		cfg.Name = "mcp-" + cfg.Spec.Name
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = 250 * time.Millisecond
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(30*time.Second, cfg.MinBackoff)
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	b := &Bridge{
		host: host, cfg: cfg, log: cfg.Logger.With("mcp_server", cfg.Spec.Name),
		reserved: map[string]bool{}, changed: make(chan struct{}, 1),
		done: make(chan struct{}), served: map[string]string{}, defs: map[string]agentfleet.ToolDef{},
	}
	for _, n := range cfg.Reserved {
		b.reserved[n] = true
	}
	b.client = mcp.NewClient(&mcp.Implementation{Name: "agentfleet-toolworker", Version: "0.1.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case b.changed <- struct{}{}:
			default: // a refresh is already due
			}
		},
		ProgressNotificationHandler: b.onProgress,
	})
	b.life, b.stop = context.WithCancel(context.Background())
	sess, err := b.connect(ctx)
	if err != nil {
		b.stop()
		return nil, fmt.Errorf("mcp server %s: %w", cfg.Spec.Name, err)
	}
	// The session is the bridge's before refresh serves its tools: a call
	// may come as soon as they are served.
	b.setSession(sess, nil)
	lctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	err = b.refresh(lctx, sess)
	cancel()
	if err != nil {
		b.stop()
		return nil, errors.Join(fmt.Errorf("mcp server %s: %w", cfg.Spec.Name, err), sess.Close())
	}
	go b.run(sess)
	return b, nil
}

// connect starts the server (stdio) or opens a session with it (HTTP).
func (b *Bridge) connect(ctx context.Context) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
	defer cancel()
	var t mcp.Transport
	if sp := b.cfg.Spec; sp.URL != "" {
		t = httpTransport(sp.URL)
	} else {
		cmd := exec.Command(sp.Command[0], sp.Command[1:]...)
		cmd.Stderr = b.cfg.Stderr
		t = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	sess, err := b.client.Connect(ctx, t, nil)
	if err != nil {
		if b.cfg.Spec.URL != "" {
			return nil, fmt.Errorf("connect to %s: %w", b.cfg.Spec.URL, err)
		}
		return nil, fmt.Errorf("start %q: %w", b.cfg.Spec.Command, err)
	}
	return sess, nil
}

// run follows the session's list changes until it ends, then reconnects
// with backoff, until Close.
func (b *Bridge) run(sess *mcp.ClientSession) {
	defer close(b.done)
	delay := b.cfg.MinBackoff
	for {
		b.setSession(sess, nil)
		since := time.Now()
		ended := make(chan error, 1)
		go func() { ended <- sess.Wait() }()
		var why error
	follow:
		for {
			select {
			case <-b.life.Done():
				b.setSession(nil, errors.New("the bridge is closing"))
				sess.Close()
				<-ended
				return
			case <-b.changed:
				ctx, cancel := context.WithTimeout(b.life, b.cfg.ConnectTimeout)
				if err := b.refresh(ctx, sess); err != nil {
					b.log.Warn("MCP tools/list after tools/list_changed failed; keeping the tools served", "err", err)
				}
				cancel()
			case why = <-ended:
				break follow
			}
		}
		if why == nil {
			why = errors.New("the connection closed")
		}
		b.setSession(nil, fmt.Errorf("it went away: %v", why))
		if time.Since(since) > b.cfg.MaxBackoff {
			delay = b.cfg.MinBackoff // it had been up for a while
		}
		b.log.Warn("MCP server went away; reconnecting", "err", why, "retry_in", delay)
		if sess = b.reconnect(&delay); sess == nil {
			return
		}
	}
}

// reconnect tries until it connects and lists the tools, or the bridge
// closes (nil). *delay is the next wait, doubled after every failure.
func (b *Bridge) reconnect(delay *time.Duration) *mcp.ClientSession {
	for attempt := 1; ; attempt++ {
		t := time.NewTimer(*delay)
		select {
		case <-b.life.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		*delay = min(*delay*2, b.cfg.MaxBackoff)
		sess, err := b.connect(b.life)
		if err == nil {
			ctx, cancel := context.WithTimeout(b.life, b.cfg.ConnectTimeout)
			err = b.refresh(ctx, sess)
			cancel()
			if err == nil {
				b.log.Info("MCP server reconnected", "attempt", attempt)
				return sess
			}
			sess.Close()
		}
		if b.life.Err() != nil {
			return nil
		}
		b.setSession(nil, fmt.Errorf("reconnecting failed: %v", err))
		b.log.Warn("MCP server reconnect failed", "attempt", attempt, "err", err, "retry_in", *delay)
	}
}

func (b *Bridge) setSession(sess *mcp.ClientSession, down error) {
	b.mu.Lock()
	b.sess, b.down = sess, down
	b.mu.Unlock()
}

func (b *Bridge) session() (*mcp.ClientSession, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sess, b.down
}

// refresh lists the server's tools and serves them, when they changed.
// Tools that cannot be fleet tools, or break a bound (Limits), are logged
// with the bound and left out; the others are served. The listing stops
// at Limits.MaxTools.
func (b *Bridge) refresh(ctx context.Context, sess *mcp.ClientSession) error {
	lim := b.cfg.Limits.withDefaults(b.host.MaxPayload())
	var listed []*mcp.Tool
	more := false
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		if len(listed) == lim.MaxTools {
			more = true
			break
		}
		listed = append(listed, t)
	}
	kept, refused, err := admit(ctx, b.cfg.Spec.ToolPrefix(), listed, more, lim, b.reserved, b.cfg.Timeout.Milliseconds())
	if err != nil {
		return err
	}
	for _, r := range refused {
		if r.bound != "" {
			b.log.Warn("MCP tool not served: over a bound", "tool", r.tool, "bound", r.bound, "err", r.err)
		} else {
			b.log.Warn("MCP tool not served", "tool", r.tool, "err", r.err)
		}
	}
	defs := map[string]agentfleet.ToolDef{}
	names := map[string]string{}
	for _, a := range kept {
		d := a.def
		if b.cfg.Claims != nil {
			if ok, owner := b.cfg.Claims.claim(b.cfg.Spec.Name, d.Name); !ok {
				b.log.Warn(fmt.Sprintf("MCP tool not served: MCP server %s of this worker serves a tool of that name; give one of them --mcp-prefix", owner), "tool", d.Name)
				continue
			}
		}
		defs[d.Name], names[d.Name] = d, a.mcpName
	}
	if b.cfg.Claims != nil {
		keep := map[string]bool{}
		for n := range defs {
			keep[n] = true
		}
		b.cfg.Claims.keep(b.cfg.Spec.Name, keep)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if maps.EqualFunc(defs, b.defs, sameDef) {
		return nil
	}
	var next Served
	if len(defs) > 0 {
		var ts []*agentfleet.Tool
		for _, name := range slices.Sorted(maps.Keys(defs)) {
			ts = append(ts, &agentfleet.Tool{ToolDef: defs[name], Handler: b.handler(name, names[name])})
		}
		var err error
		next, err = b.host.Serve(b.cfg.Name, ts)
		if err != nil {
			return fmt.Errorf("serve its tools: %w", err)
		}
	}
	// The new set takes calls before the old one stops; the old one's calls
	// in flight may finish.
	if old := b.current; old != nil {
		b.draining.Add(1)
		go func() {
			defer b.draining.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := old.Drain(ctx); err != nil {
				b.log.Warn("draining replaced MCP tools", "worker", old.Name(), "err", err)
			}
		}()
	}
	b.current, b.defs, b.served = next, defs, names
	served := slices.Sorted(maps.Keys(defs))
	b.log.Info("MCP tools served", "tools", served)
	if b.cfg.OnChange != nil {
		b.cfg.OnChange(served)
	}
	return nil
}

func sameDef(a, b agentfleet.ToolDef) bool {
	return a.Name == b.Name && a.Label == b.Label && a.Description == b.Description &&
		string(a.InputSchema) == string(b.InputSchema) && string(a.OutputSchema) == string(b.OutputSchema) &&
		a.Annotations == b.Annotations && a.TimeoutMS == b.TimeoutMS
}

// handler calls the MCP tool mcpName for the fleet tool name: progress
// notifications become the call's progress, the call's cancellation the
// request's (the SDK sends notifications/cancelled).
func (b *Bridge) handler(name, mcpName string) agentfleet.Handler {
	return agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
		sess, down := b.session()
		if sess == nil {
			return nil, fmt.Errorf("Tool %s: MCP server %s is not connected (%v); the worker reconnects to it, try again later", name, b.cfg.Spec.Name, down)
		}
		args := call.Arguments
		if args == nil {
			args = map[string]any{}
		}
		token := fmt.Sprintf("%s/%d", b.cfg.Spec.Name, b.seq.Add(1))
		b.progress.Store(token, call.Progress)
		defer b.progress.Delete(token)
		params := &mcp.CallToolParams{Name: mcpName, Arguments: args}
		params.SetProgressToken(token)
		r, err := sess.CallTool(ctx, params)
		if err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("Tool %s: MCP server %s: %w", name, b.cfg.Spec.Name, err)
		}
		res, isError, err := ResultIn(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("Tool %s: MCP server %s: %w", name, b.cfg.Spec.Name, err)
		}
		if isError {
			msg := agentfleet.JoinText(res.Content)
			if msg == "" {
				msg = fmt.Sprintf("Tool %s: MCP server %s reported an error without a message", name, b.cfg.Spec.Name)
			}
			return nil, errors.New(msg)
		}
		return res, nil
	})
}

// onProgress passes a progress notification to the call that holds its
// token, as a partial result {"progress", "total", "message"}.
func (b *Bridge) onProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p := req.Params
	f, ok := b.progress.Load(fmt.Sprint(p.ProgressToken))
	if !ok {
		return
	}
	partial := map[string]any{"progress": p.Progress}
	if p.Total != 0 {
		partial["total"] = p.Total
	}
	if p.Message != "" {
		partial["message"] = p.Message
	}
	f.(func(any))(partial)
}

// Served returns the fleet names of the tools served now, sorted.
func (b *Bridge) Served() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.defs))
}

// Defs returns the definitions of the tools served now, sorted by name.
func (b *Bridge) Defs() []agentfleet.ToolDef {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []agentfleet.ToolDef
	for _, n := range slices.Sorted(maps.Keys(b.defs)) {
		out = append(out, b.defs[n])
	}
	return out
}

// Connected reports whether the bridge has a session with the server now.
func (b *Bridge) Connected() bool {
	s, _ := b.session()
	return s != nil
}

// InFlight returns the calls running now.
func (b *Bridge) InFlight() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.current == nil {
		return 0
	}
	return b.current.InFlight()
}

// Close stops taking calls, lets those in flight finish until ctx ends
// (then cancels them), and closes the session, stopping a stdio server.
func (b *Bridge) Close(ctx context.Context) error {
	b.mu.Lock()
	cur := b.current
	b.current, b.defs, b.served = nil, map[string]agentfleet.ToolDef{}, map[string]string{}
	b.mu.Unlock()
	var errs []error
	if cur != nil {
		errs = append(errs, cur.Drain(ctx))
	}
	b.stop()
	<-b.done
	b.draining.Wait()
	if b.cfg.Claims != nil {
		b.cfg.Claims.keep(b.cfg.Spec.Name, nil)
	}
	return errors.Join(errs...)
}
