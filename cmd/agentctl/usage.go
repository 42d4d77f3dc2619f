package main

import (
	"flag"
	"fmt"
	"io"
)

// usage writes the program's usage text to w.
func (m *Main) usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage: agentctl [flags] <command> [arguments]

agentctl talks to an agentfleet over NATS.

Commands:
`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-34s %s\n", c.name+" "+c.args, c.help)
		for _, s := range c.subs {
			fmt.Fprintf(w, "  %-34s %s\n", c.name+" "+s.name+" "+s.args, s.help)
		}
	}
	fmt.Fprint(w, `
A <text> of "-" is read from standard input. Put "--" before a text that
starts with "-". Flags may also follow the command.

The tools subcommands export, import, history and delete manage the
scripted tools (those written with write_tool) in the JetStream KV bucket
agent_tools; they need a NATS user that may use JetStream. import makes
exactly the checks of write_tool: the name must not be taken by a tool of
the fleet other than a scripted one, which it replaces only with --replace
or "replace": true in the file; the schema must compile; the scripts must
compile and pass a dry run. To restore an earlier revision, checked again:

  agentctl tools export --revision N <name> | agentctl tools import --replace -

The first argument of tools is taken for a subcommand when it is export,
import, history or delete, so no agent of those names can be given to it.

Command flags:
  --json          print raw JSON (ask, tail, history, tools, call, replay,
                  diff; tools history, import and delete; tools export
                  prints JSON anyway)
  --id string     client message id, for de-duplication (ask, send, steer)
  --revision N    the revision to print (tools export)
  --replace       replace a scripted tool of the same name (tools import)
  --http addr     the dashboard's address, default 127.0.0.1:8081 (dashboard)
  --read-only     show no actions (dashboard)
  --trace-url url link trace ids to a tracing UI, {trace_id} replaced by
                  the id; default $AGENTFLEET_TRACE_URL (dashboard)
  --http-token-file f, --http-viewer-token-file f
                  the writer and viewer tokens of the dashboard; required
                  off loopback, unless --insecure-http (dashboard)
  --http-allowed-hosts names, --http-max-body n, --http-body-timeout d,
  --http-proxy-user-header h, --http-proxy-writers names,
  --dashboard-max-clients n, --dashboard-max-replay d,
  --dashboard-max-replay-bytes n
                  as the orchestrator's (dashboard)
  --reject        reject the call (approve)
  --reason text   why, for the model (approve)
  --args json     approve with these arguments instead (approve)
  --at SEQ, --before-run RUN
                  where to fork: after stored message SEQ, or before run
                  RUN; neither: the whole history (fork)
  --model M, --profile FILE, --into NEW
                  the model to re-run with, the profile file to take it
                  from (only model may be set), the new session (replay)

history asks an orchestrator, so whoever may ask a session may read it;
fork and replay need a user that may publish on agent.fork.>, delete one
that may publish on agent.delete.> (no shipped role may: give them to an
operator); diff reads histories as history does.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(m.Stderr)
}
