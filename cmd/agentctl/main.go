// Command agentctl talks to an agentfleet from a terminal: it asks agents
// questions, follows their events, chats with them, and lists and calls the
// fleet's tools, all over the public NATS subjects (docs/PROTOCOL.md).
//
//	agentctl ask default demo "what time is it in Tokyo?"
//	agentctl tail default
//	agentctl chat default
//	agentctl call calculator '{"expression":"2*(3+4)"}'
//	agentctl tools export weather > tools/weather.json
//	agentctl tools import --replace tools/weather.json
//	agentctl mcp default   # an MCP server on stdio, for MCP clients
//	agentctl replay --model M default demo RUN   # RUN again in a fork, compared
//
// The scripted tools of the fleet (write_tool) are managed with the
// subcommands of tools: export, import, history and delete. They read and
// write the JetStream KV bucket agent_tools directly, so they need a NATS
// user with JetStream rights (the orchestrator's or an administrator's, not
// the client role's). Since a first argument of tools that names one of
// them is the subcommand, `agentctl tools export` cannot list the tools of
// an agent named export (or import, history or delete).
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
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/client"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/cli"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/agentfleet/agentfleet/internal/httpauth"
)

func main() {
	m := NewMain()
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// SIGINT goes to Run, which decides: chat aborts the running run on the
	// first Ctrl-C and exits on the second, every other command stops at
	// once. SIGTERM always stops.
	interrupt := make(chan os.Signal, 2)
	signal.Notify(interrupt, os.Interrupt)
	m.Interrupt = interrupt
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	err := m.Run(ctx)
	stop()
	if cerr := m.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("agentctl: %w", cerr)
	}
	var code exitCode
	switch {
	case errors.As(err, &code):
		os.Exit(int(code))
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// exitCode is the error of a command that has already said on Stderr what
// went wrong; the program exits with the code and prints nothing more.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// Main is the agentctl program: ParseFlags, then Run, then Close. Tests set
// Stdin, Stdout, Stderr and Interrupt to drive it in-process.
type Main struct {
	NATS cli.NATSFlags
	Log  cli.LogFlags
	// Prefix is the first token of every subject.
	Prefix string
	// Timeout bounds the wait for an answer; zero means the command's own
	// default (see the usage text).
	Timeout time.Duration
	// JSON prints raw JSON instead of readable text.
	JSON bool
	// ID is the client message id of ask, send and steer; the orchestrator
	// drops a second message with the same id.
	ID string
	// Revision is the revision that tools export prints; zero means the
	// current one.
	Revision uint64
	// Replace lets tools import replace a scripted tool of the same name,
	// as "replace": true in the file does.
	Replace bool
	// Since makes tail start this far back, from the events the fleet keeps
	// in JetStream, and go on from there.
	Since time.Duration
	// HTTP is the address the dashboard command serves on.
	HTTP string
	// ReadOnly makes the dashboard show no actions whatever the NATS user
	// may do.
	ReadOnly bool
	// TraceURL links the dashboard's trace ids to a tracing UI
	// (dashboard.Config.TraceURL).
	TraceURL string
	// HTTPAuth guards the dashboard's listener; DashLimits bound its event
	// streams.
	HTTPAuth   httpauth.Flags
	DashLimits dashboard.Limits
	// Reject, Reason and Args shape the decision of approve: a rejection
	// instead of an approval, its reason, and edited arguments (JSON).
	Reject bool
	Reason string
	Args   string
	// At and BeforeRun are the point of fork.
	At        uint64
	BeforeRun string
	// Output is where call writes the file its tool returns ("-": stdout).
	Output string
	// Model, Profile and Into shape a replay: the model to re-run with
	// (or the profile file to take it from), and the new session.
	Model, Profile, Into string

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Interrupt delivers Ctrl-C. In chat, the first one during a run aborts
	// the run and the next one exits; every other command stops. Nil means
	// no interrupts.
	Interrupt <-chan os.Signal

	cmd      *command
	sub      *command // the subcommand of cmd, if any
	pos      []string // positional arguments of the (sub)command
	subjects bus.Subjects
	logger   *slog.Logger
	conn     *client.Conn
	dashAddr atomic.Value
}

// NewMain returns a Main with the defaults of its flags (the NATS ones
// from NATS_URL and the other NATS_ variables when set), on the process's
// standard streams.
func NewMain() *Main {
	return &Main{
		NATS:   cli.NATSFromEnv("nats://127.0.0.1:4222"),
		Log:    cli.LogFlags{Format: "text", Level: "info"},
		Prefix: bus.DefaultPrefix,
		Stdin:  os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
}

// command describes one subcommand: its arguments, its own flags and how
// to check its positional arguments. A command with subs has subcommands,
// chosen by its first argument; without one of their names there, the
// command itself runs.
type command struct {
	name, args, help  string
	json, id          bool // takes --json, --id
	revision, replace bool // takes --revision, --replace
	since             bool // takes --since
	dashboard         bool // takes --http, --read-only, --trace-url
	decision          bool // takes --reject, --reason, --args
	fork              bool // takes --at, --before-run
	replay            bool // takes --model, --profile, --into
	check             func(m *Main, pos []string) error
	run               func(m *Main, ctx context.Context) error
	subs              []*command
}

// toolsCommands are the subcommands of tools, which manage the scripted
// tools in the KV bucket.
var toolsCommands = []*command{
	{name: "export", args: "<name>", help: "print a scripted tool's definition as JSON (--revision N: an earlier one)", json: true, revision: true, check: checkToolName, run: (*Main).exportTool},
	{name: "import", args: "<file>", help: "store a definition file ('-': stdin) after write_tool's checks (--replace)", json: true, replace: true, check: checkImport, run: (*Main).importTool},
	{name: "history", args: "<name>", help: "list the stored revisions of a scripted tool, with their times", json: true, check: checkToolName, run: (*Main).toolHistory},
	{name: "delete", args: "<name>", help: "delete a scripted tool (its revisions stay in the history)", json: true, check: checkToolName, run: (*Main).deleteTool},
}

var commands = []*command{
	{name: "ask", args: "<agent> <session> <text>", help: "send a message and print the answer (agent.ask)", json: true, id: true, check: checkMessage, run: (*Main).ask},
	{name: "send", args: "<agent> <session> <text>", help: "send a message without waiting (agent.in)", id: true, check: checkMessage, run: (*Main).send},
	{name: "steer", args: "<agent> <session> <text>", help: "steer the running run before its next model call (agent.steer)", id: true, check: checkMessage, run: (*Main).steer},
	{name: "abort", args: "<agent> <session> [reason]", help: "abort the session's running run (agent.abort); fails when there is none", check: checkAbort, run: (*Main).abort},
	{name: "approve", args: "<agent> <session> <call>", help: "decide a tool call that waits for approval (agent.approve): approve it, edit it with --args, or --reject it with a --reason", json: true, decision: true, check: checkApprove, run: (*Main).approve},
	{name: "fork", args: "<agent> <session> <new-session>", help: "copy a session's records up to a point (--at SEQ, --before-run RUN) into a new session (agent.fork)", json: true, fork: true, check: checkFork, run: (*Main).fork},
	{name: "tail", args: "[agent [session]]", help: "follow events as readable lines; '*' matches any agent or session (--since 10m: replay first)", json: true, since: true, check: checkTail, run: (*Main).tail},
	{name: "cost", args: "[agent]", help: "sum what the stored runs cost, by session and agent, from the history stream (--since 24h: only those stored since)", json: true, since: true, check: checkCost, run: (*Main).cost},
	{name: "chat", args: "<agent> [session]", help: "chat in the terminal, with the answer and tool calls as they stream", check: checkChat, run: (*Main).chat},
	{name: "history", args: "<agent> <session>", help: "print a session's stored records with their sequences, runs and writers", json: true, check: checkSession, run: (*Main).history},
	{name: "tools", args: "[agent]", help: "list the fleet's tools with their argument schemas; given an agent, the tools it sees (from its orchestrator)", json: true, check: checkTools, run: (*Main).tools, subs: toolsCommands},
	{name: "call", args: "<tool> [json-args]", help: "run one tool on the fleet directly, printing its progress", json: true, check: checkCall, run: (*Main).call},
	{name: "dashboard", args: "", help: "serve the browser dashboard on --http (actions hidden when the NATS user may not send, or with --read-only)", dashboard: true, check: checkDashboard, run: (*Main).dashboard},
	{name: "mcp", args: "[agent]", help: "serve the fleet to an MCP client on stdin/stdout: the agent's tools (default \"default\") and an ask_<agent> tool per agent", check: checkTools, run: (*Main).mcp},
	{name: "replay", args: "<agent> <session> <run>", help: "re-run a run's first user message in a fork before the run (--into NEW), with another model the agent allows (--model M, --profile FILE), and compare the two runs (agent.fork, agent.ask)", json: true, replay: true, check: checkReplay, run: (*Main).replayRun},
	{name: "diff", args: "<agent> <session> <run> <other-session> [other-run]", help: "print two stored runs side by side: messages, tool calls, results, tokens, cost, model (default other run: the first after the other session's fork)", json: true, check: checkDiff, run: (*Main).diffRuns},
	{name: "delete", args: "<agent> <session>", help: "delete a session's records everywhere: history, input, events, objects (agent.delete)", json: true, check: checkDelete, run: (*Main).deleteSession},
}

func lookup(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

// globalFlags registers the flags every command takes on fs, with the
// current values as defaults, so that flags given before the command stay
// set when the command's own flag set registers them again.
func (m *Main) globalFlags(fs *flag.FlagSet) {
	nf, lf := m.NATS, m.Log
	m.NATS.Register(fs, nf.URL)
	m.Log.Register(fs)
	m.NATS, m.Log = nf, lf
	fs.StringVar(&m.Prefix, "prefix", m.Prefix, "subject prefix")
	fs.DurationVar(&m.Timeout, "timeout", m.Timeout, "how long to wait for an answer (default: 5m for ask, the tool's own timeout for call, 2s for tools, none for chat)")
}

// ParseFlags reads the command line: global flags, the command, its flags
// and arguments. The error names the command and the argument at fault;
// flag.ErrHelp means the usage was asked for and printed.
func (m *Main) ParseFlags(args []string) error {
	top := flag.NewFlagSet("agentctl", flag.ContinueOnError)
	top.SetOutput(m.Stderr)
	top.Usage = func() { m.usage(m.Stderr, top) }
	m.globalFlags(top)
	if err := cli.Parse(top, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("agentctl: %w", err)
	}
	if top.NArg() == 0 {
		m.usage(m.Stderr, top)
		return errors.New("agentctl: no command given")
	}
	name := top.Arg(0)
	if name == "help" {
		m.usage(m.Stdout, top)
		return flag.ErrHelp
	}
	m.cmd = lookup(name)
	if m.cmd == nil {
		names := make([]string, len(commands))
		for i, c := range commands {
			names[i] = c.name
		}
		return fmt.Errorf("agentctl: unknown command %q (commands: %s)", name, strings.Join(names, ", "))
	}

	fs := flag.NewFlagSet("agentctl "+name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		help := strings.ToUpper(m.cmd.help[:1]) + m.cmd.help[1:]
		fmt.Fprintf(m.Stderr, "Usage: agentctl %s [flags] %s\n\n%s.\n", name, m.cmd.args, help)
		if len(m.cmd.subs) > 0 {
			fmt.Fprintf(m.Stderr, "\nSubcommands (an agent cannot be named like one of them):\n")
			for _, s := range m.cmd.subs {
				fmt.Fprintf(m.Stderr, "  %-30s %s\n", name+" "+s.name+" "+s.args, s.help)
			}
		}
		fmt.Fprintf(m.Stderr, "\nFlags:\n")
		fs.PrintDefaults()
	}
	m.globalFlags(fs)
	// The subcommand is known only once the flags are parsed, so the flags
	// of all of them are registered, and those given to the wrong one are
	// refused below.
	if m.cmd.anyTakes("json") {
		fs.BoolVar(&m.JSON, "json", false, "print raw JSON")
	}
	if m.cmd.anyTakes("id") {
		fs.StringVar(&m.ID, "id", "", "client message id; the orchestrator drops a repeated id")
	}
	if m.cmd.anyTakes("revision") {
		fs.Uint64Var(&m.Revision, "revision", 0, "print this revision of the tool (see tools history), not the current one")
	}
	if m.cmd.anyTakes("replace") {
		fs.BoolVar(&m.Replace, "replace", false, "replace a scripted tool of the same name")
	}
	if m.cmd.anyTakes("http") {
		fs.StringVar(&m.HTTP, "http", "127.0.0.1:8081", "address the dashboard serves on")
		fs.BoolVar(&m.ReadOnly, "read-only", false, "show no actions, even when the NATS user may send messages and aborts")
		fs.StringVar(&m.TraceURL, "trace-url", os.Getenv("AGENTFLEET_TRACE_URL"), "link trace ids to this tracing UI URL, {trace_id} replaced by the id, e.g. http://localhost:16686/trace/{trace_id} (default $AGENTFLEET_TRACE_URL)")
		m.HTTPAuth.Register(fs, false)
		m.DashLimits.Register(fs)
	}
	if m.cmd.anyTakes("reject") {
		fs.BoolVar(&m.Reject, "reject", false, "reject the call instead of approving it")
		fs.StringVar(&m.Reason, "reason", "", "why: the model sees it in the error result of a rejected call")
		fs.StringVar(&m.Args, "args", "", "approve the call with these arguments instead (a JSON object, checked against the tool's schema)")
	}
	if m.cmd.anyTakes("o") {
		fs.StringVar(&m.Output, "o", "", "write the file the tool returns (its first ref block, or image) to this path; '-': standard output")
	}
	if m.cmd.anyTakes("at") {
		m.forkFlags(fs)
	}
	if m.cmd.anyTakes("model") {
		m.replayFlags(fs)
	}
	if m.cmd.anyTakes("since") {
		fs.DurationVar(&m.Since, "since", 0, "how far back (e.g. 10m): tail replays the events the fleet keeps in JetStream from there; cost counts the runs stored since")
	}
	pos, err := parseInterspersed(fs, top.Args()[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("agentctl %s: %w", name, err)
	}
	check := m.cmd.check
	if len(pos) > 0 {
		for _, s := range m.cmd.subs {
			if pos[0] == s.name {
				m.sub, check, pos = s, s.check, pos[1:]
				name += " " + s.name
				break
			}
		}
	}
	chosen := m.cmd
	if m.sub != nil {
		chosen = m.sub
	}
	var wrong string
	fs.Visit(func(f *flag.Flag) {
		if wrong == "" && slices.Contains(commandFlags, f.Name) && !chosen.takes(f.Name) {
			wrong = f.Name
		}
	})
	if wrong != "" {
		return fmt.Errorf("agentctl %s: flag provided but not defined: -%s", name, wrong)
	}
	if chosen.takes("trace-url") {
		if err := dashboard.CheckTraceURL(m.TraceURL); err != nil {
			return fmt.Errorf("agentctl %s: %s: %w", name, cli.FlagSource(fs, "trace-url", "AGENTFLEET_TRACE_URL"), err)
		}
	}
	if m.subjects, err = bus.NewSubjects(m.Prefix); err != nil {
		return fmt.Errorf("agentctl %s: --prefix: %w", name, err)
	}
	if m.Timeout < 0 {
		return fmt.Errorf("agentctl %s: --timeout %v: must not be negative", name, m.Timeout)
	}
	if err := check(m, pos); err != nil {
		return fmt.Errorf("agentctl %s: %w", name, err)
	}
	m.pos = pos
	if m.logger, err = m.Log.Logger(m.Stderr); err != nil {
		return fmt.Errorf("agentctl %s: %w", name, err)
	}
	return nil
}

// parseInterspersed parses flags that may stand between positional
// arguments, and returns the positional ones. Everything after "--" is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := cli.Parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// Run connects to NATS and runs the command. It returns when the command
// is done, ctx ends, or (except in chat) an interrupt arrives. A command
// that ends because of ctx or an interrupt returns nil.
func (m *Main) Run(ctx context.Context) error {
	if m.cmd == nil {
		return errors.New("agentctl: Run before ParseFlags")
	}
	name, run := m.cmd.name, m.cmd.run
	if m.sub != nil {
		name, run = name+" "+m.sub.name, m.sub.run
	}
	var err error
	if m.conn, err = client.Dial(m.NATS.Config("agentctl", m.logger), m.logger); err != nil {
		return fmt.Errorf("agentctl %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if m.Interrupt != nil && m.cmd.name != "chat" {
		go func() {
			select {
			case <-m.Interrupt:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	err = run(m, ctx)
	var code exitCode
	if err != nil && !errors.As(err, &code) {
		err = fmt.Errorf("agentctl %s: %w", name, err)
	}
	return err
}

// Close disconnects from NATS; it may be called whether or not Run was.
func (m *Main) Close() error {
	if m.conn != nil {
		m.conn.Close()
	}
	return nil
}

// checkName checks a positional argument that names an agent, a session or
// a tool.
func checkName(what, s string) error { return bus.CheckToken(what, s) }

func checkMessage(m *Main, pos []string) error {
	if len(pos) < 3 {
		return fmt.Errorf("want <agent> <session> <text>, got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	return checkName("session", pos[1])
}

func checkAbort(m *Main, pos []string) error {
	if len(pos) < 2 {
		return fmt.Errorf("want <agent> <session> [reason], got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	return checkName("session", pos[1])
}

// checkSession checks the arguments of a command on one session.
func checkSession(m *Main, pos []string) error {
	if len(pos) != 2 {
		return fmt.Errorf("want <agent> <session>, got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	return checkName("session", pos[1])
}

func checkTail(m *Main, pos []string) error {
	if len(pos) > 2 {
		return fmt.Errorf("want [agent [session]], got %d arguments", len(pos))
	}
	for i, what := range []string{"agent", "session"}[:len(pos)] {
		if pos[i] != "*" {
			if err := checkName(what, pos[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkChat(m *Main, pos []string) error {
	if len(pos) < 1 || len(pos) > 2 {
		return fmt.Errorf("want <agent> [session], got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	if len(pos) == 2 {
		return checkName("session", pos[1])
	}
	return nil
}

func checkTools(m *Main, pos []string) error {
	if len(pos) > 1 {
		return fmt.Errorf("want [agent], got %d arguments", len(pos))
	}
	if len(pos) == 1 {
		return checkName("agent", pos[0])
	}
	return nil
}

// checkToolName checks the arguments of the tools subcommands that take
// the name of a scripted tool.
func checkToolName(m *Main, pos []string) error {
	if len(pos) != 1 {
		return fmt.Errorf("want <name>, got %d arguments", len(pos))
	}
	return checkName("tool", pos[0])
}

func checkImport(m *Main, pos []string) error {
	if len(pos) != 1 {
		return fmt.Errorf("want <file> (- for standard input), got %d arguments", len(pos))
	}
	if pos[0] == "" {
		return errors.New("the file name is empty")
	}
	return nil
}

func checkCall(m *Main, pos []string) error {
	if len(pos) < 1 || len(pos) > 2 {
		return fmt.Errorf("want <tool> [json-args], got %d argument(s)", len(pos))
	}
	if err := checkName("tool", pos[0]); err != nil {
		return err
	}
	if len(pos) == 2 {
		if _, err := parseArgs(pos[1]); err != nil {
			return err
		}
	}
	return nil
}
