// Command fleetbench measures the cost of a tool call that crosses NATS, the
// throughput of a fleet of workers and how it grows with the fleet, and how
// many sessions one orchestrator holds. Every ratio it prints comes from
// numbers measured side by side in the same run, so that they hold from one
// machine to another even where absolute times do not.
//
//	fleetbench dispatch   raw NATS request-reply vs the full dispatch path vs in-process
//	fleetbench scale      sleep-like tools on 1, 2 and 4 worker processes, and one slow worker
//	fleetbench sessions   N concurrent sessions on one orchestrator: runs/s, latency, memory
//	fleetbench chaos      seeded fault injection over real processes; checks what is stored
//
// Unless --nats-url is given, fleetbench runs its own NATS server in the
// process, on a free loopback port with JetStream off; --server process runs
// it as a child process instead. Workers and the raw responder run in child
// processes: fleetbench starts itself again with the hidden subcommands
// "worker" and "responder", and stops them when it ends.
// --json prints the results as JSON; otherwise they are printed as tables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"syscall"

	"github.com/agentfleet/agentfleet/internal/bus"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/cli"
	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := m.Run(ctx)
	stop()
	err = errors.Join(err, m.Close())
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

// Subcommands. Responder and worker are the child processes that the
// benchmarks start; they are not meant to be run by hand, though they can be.
const (
	cmdDispatch  = "dispatch"
	cmdScale     = "scale"
	cmdSessions  = "sessions"
	cmdOrchs     = "orchestrators"
	cmdResponder = "responder"
	cmdWorker    = "worker"
	cmdChaos     = "chaos"
	// cmdChaosLedger is the ledger worker child of the chaos harness.
	cmdChaosLedger = "chaos-ledger"
)

// Main is the fleetbench program: ParseFlags, then Run, then Close.
type Main struct {
	// Command is the subcommand.
	Command string
	// NATSURL is the server to use; empty starts an embedded one.
	NATSURL string
	// Server is where the NATS server runs: embedded, external or process.
	Server string
	// JSON prints the report as JSON instead of tables.
	JSON bool
	// ProfileDir, if set, receives CPU profiles of this process and of the
	// worker processes, and a heap profile at the end of the run.
	ProfileDir string
	// Sync is when the embedded server's JetStream syncs to disk (--sync).
	Sync busserver.Sync
	// ServerCPUs, with --server process, are the CPUs of the nats-server
	// child (--server-cpus); this process and its workers get the others.
	ServerCPUs string

	Dispatch      DispatchConfig
	Scale         ScaleConfig
	Sessions      SessionsConfig
	Orchestrators OrchestratorsConfig
	Responder     ResponderConfig
	Worker        WorkerConfig
	Chaos         ChaosConfig

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Exe is the program started for child processes; default this one.
	Exe string

	// Report is the result of the last benchmark Run, for tests.
	Report any

	logger   *slog.Logger
	cpus     cpuSplit // --server-cpus
	embedded *server.Server
	jsDir    string // the embedded server's JetStream store, when it has one
	server   *serverProc
	url      string
}

// NewMain returns a Main with the defaults of its flags.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}

const usage = `usage: fleetbench <command> [flags]

commands:
  dispatch   the cost of one tool call: raw NATS, the full dispatch path, in-process
  scale      throughput of sleep-like tools on 1, 2 and 4 workers, and with one slow worker
  sessions   N concurrent sessions on one orchestrator: runs/s, tool calls/s, latency, memory
  orchestrators  runs/s with 1, 2 and 3 orchestrators sharing the sessions, and the failover time
  chaos      seeded faults (kills, stops, NATS restarts) under load; checks the stored histories

Run "fleetbench <command> -h" for the flags of a command.
`

// ParseFlags reads the subcommand and its flags.
func (m *Main) ParseFlags(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(m.Stderr, usage)
		if len(args) == 0 {
			return errors.New("no command given")
		}
		return flag.ErrHelp
	}
	m.Command = args[0]
	fs := flag.NewFlagSet("fleetbench "+m.Command, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&m.NATSURL, "nats-url", "", "NATS server URL; default an embedded server on a free loopback port")
	switch m.Command {
	case cmdDispatch, cmdScale, cmdSessions, cmdOrchs, cmdChaos:
		fs.BoolVar(&m.JSON, "json", false, "print the results as JSON")
		fs.StringVar(&m.ProfileDir, "profile-dir", "", "write CPU profiles of this process and its workers, and a heap profile, to this directory")
	}
	switch m.Command {
	case cmdDispatch, cmdScale, cmdSessions, cmdOrchs:
		fs.StringVar(&m.Server, "server", "", "where the NATS server runs: embedded (in this process), external (--nats-url), process (a nats-server child built with go build); default embedded, or external with --nats-url")
		fs.StringVar(&m.ServerCPUs, "server-cpus", "", "with --server process: the CPUs of the nats-server child (a list such as 1 or 2-3); this process and its workers run on the others, so that the server shares no core with what is measured, as NATS runs on machines of its own in production")
	}
	syncFlag := "always"
	switch m.Command {
	case cmdSessions, cmdOrchs:
		fs.StringVar(&syncFlag, "sync", "always", "when the embedded server's JetStream syncs its store to disk: always (fsync before every acknowledgement, the orchestrator's default) or a duration such as 2m (nats-server's lazy default)")
	}
	switch m.Command {
	case cmdDispatch:
		m.Dispatch.register(fs)
	case cmdScale:
		m.Scale.register(fs)
	case cmdSessions:
		m.Sessions.register(fs)
	case cmdOrchs:
		m.Orchestrators.register(fs)
	case cmdResponder:
		m.Responder.register(fs)
	case cmdWorker:
		m.Worker.register(fs)
	case cmdChaos:
		m.Chaos.register(fs)
	case cmdChaosLedger:
	default:
		fmt.Fprint(m.Stderr, usage)
		return fmt.Errorf("unknown command %q", m.Command)
	}
	if err := cli.Parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", m.Command, fs.Arg(0))
	}
	var err error
	if m.Sync, err = busserver.ParseSync(syncFlag); err != nil {
		return fmt.Errorf("%s: --%w", m.Command, err)
	}
	switch m.Command {
	case cmdDispatch, cmdScale, cmdSessions, cmdOrchs:
		err = m.checkServer()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.Command, err)
	}
	switch m.Command {
	case cmdDispatch:
		err = m.Dispatch.check()
	case cmdScale:
		err = m.Scale.check()
	case cmdSessions:
		err = m.Sessions.check()
	case cmdOrchs:
		err = m.Orchestrators.check()
	case cmdChaos:
		err = m.Chaos.check()
	case cmdResponder, cmdWorker:
		if m.NATSURL == "" {
			err = errors.New("--nats-url is required")
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.Command, err)
	}
	if _, ok := m.Stderr.(*os.File); !ok {
		// Child processes copy their stderr here from goroutines of their own.
		m.Stderr = &lockedWriter{w: m.Stderr}
	}
	m.logger = slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Run runs the subcommand. A benchmark returns when it has printed its
// report; a child process (responder, worker) serves until ctx ends or its
// standard input closes, which is how its parent stops it.
func (m *Main) Run(ctx context.Context) (err error) {
	switch m.Command {
	case cmdResponder:
		return m.runResponder(ctx)
	case cmdWorker:
		return m.runWorker(ctx)
	case cmdChaosLedger:
		return m.runChaosLedger(ctx)
	}
	if m.Exe == "" {
		if m.Exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding this program to start workers: %w", err)
		}
	}
	if m.Command == cmdChaos {
		// The harness runs its own nats-server, with JetStream.
		rep, err := m.runChaos(ctx)
		if err != nil {
			return err
		}
		m.Report = rep
		if err := printReport(m.Stdout, rep, m.JSON); err != nil {
			return err
		}
		for _, s := range rep.(*ChaosReport).Seeds {
			if s.Total() > 0 || !s.Quiesced {
				return errViolations
			}
		}
		return nil
	}
	if err := m.pin(); err != nil {
		return err
	}
	if err := m.startNATS(ctx); err != nil {
		return err
	}
	if m.ProfileDir != "" {
		stop, err := startCPUProfile(filepath.Join(m.ProfileDir, "fleetbench-"+m.Command+".cpu.pprof"))
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	var rep report
	switch m.Command {
	case cmdDispatch:
		rep, err = m.runDispatch(ctx)
	case cmdScale:
		rep, err = m.runScale(ctx)
	case cmdSessions:
		rep, err = m.runSessions(ctx)
	case cmdOrchs:
		rep, err = m.runOrchestrators(ctx)
	}
	if err != nil {
		return err
	}
	m.Report = rep
	// The sessions benchmark writes its heap profile itself, while its
	// sessions are still in memory.
	if m.ProfileDir != "" && m.Command != cmdSessions {
		if err := writeHeapProfile(filepath.Join(m.ProfileDir, "fleetbench-"+m.Command+".heap.pprof")); err != nil {
			return err
		}
	}
	return printReport(m.Stdout, rep, m.JSON)
}

// connect opens a client connection to the benchmark's server.
func (m *Main) connect(name string) (*bus.Conn, error) {
	return bus.Connect(bus.ConnectConfig{URL: m.url, Name: name, Logger: m.logger})
}

// Close stops the NATS server fleetbench started, embedded or child
// process. Other child processes are stopped by the benchmark that started
// them.
func (m *Main) Close() error {
	if m.embedded != nil {
		m.embedded.Shutdown()
		m.embedded.WaitForShutdown()
		m.embedded = nil
	}
	if m.jsDir != "" {
		os.RemoveAll(m.jsDir)
		m.jsDir = ""
	}
	if m.server != nil {
		err := m.server.stop()
		m.server = nil
		return err
	}
	return nil
}

func startCPUProfile(file string) (stop func() error, err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile %s: %w", file, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

func writeHeapProfile(file string) error {
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("heap profile %s: %w", file, err)
	}
	return f.Close()
}
