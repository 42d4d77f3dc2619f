package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/bus/slots"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// deployConf is the server configuration that operators deploy.
var deployConf = filepath.Join("..", "..", "deploy", "nats", "nats.conf")

// roles is a server running deploy/nats/nats.conf, and the passwords of its
// users as the file sets them.
type roles struct {
	s         *server.Server
	passwords map[string]string
}

func runDeployConf(t *testing.T) *roles {
	t.Helper()
	opts, err := server.ProcessConfigFile(deployConf)
	if err != nil {
		t.Fatal(err)
	}
	r := &roles{passwords: map[string]string{}}
	for _, u := range opts.Users {
		r.passwords[u.Username] = u.Password
	}
	for _, role := range []string{"orchestrator", "toolworker", "client", "dashboard", "standalone", "alice", "bob"} {
		if r.passwords[role] == "" {
			t.Fatalf("%s defines no user %q", deployConf, role)
		}
	}
	r.s, err = busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ConfigFile: deployConf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.s.Shutdown()
		r.s.WaitForShutdown()
	})
	return r
}

// connect connects as user, with the user's own inbox prefix
// (_INBOX.<user>); the server's asynchronous errors, such as permission
// violations, arrive on the returned channel.
func (r *roles) connect(t *testing.T, user string) (*nats.Conn, <-chan error) {
	t.Helper()
	return r.connectInbox(t, user, "_INBOX."+user)
}

// connectInbox is connect with the inbox prefix given.
func (r *roles) connectInbox(t *testing.T, user, inboxPrefix string) (*nats.Conn, <-chan error) {
	t.Helper()
	errs := make(chan error, 64)
	nc, err := nats.Connect(r.s.ClientURL(), nats.Name(t.Name()+"/"+user), nats.UserInfo(user, r.passwords[user]), nats.CustomInboxPrefix(inboxPrefix),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case errs <- err:
			default:
			}
		}))
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// wantViolation waits for the server to report that the connection may not
// do op ("Publish" or "Subscription") on subject.
func wantViolation(t *testing.T, errs <-chan error, op, subject string) {
	t.Helper()
	want := fmt.Sprintf("Permissions Violation for %s to %q", op, subject)
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case err := <-errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
			t.Logf("other async error: %v", err)
		case <-timeout.C:
			t.Fatalf("no %q from the server", want)
		}
	}
}

// wantViolationUnder is wantViolation for any subject that starts with
// prefix.
func wantViolationUnder(t *testing.T, errs <-chan error, op, prefix string) {
	t.Helper()
	want := fmt.Sprintf("Permissions Violation for %s to %q", op, prefix)
	want = want[:len(want)-1] // open the closing quote
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case err := <-errs:
			if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), want) {
				return
			}
			t.Logf("other async error: %v", err)
		case <-timeout.C:
			t.Fatalf("no %s…\" from the server", want)
		}
	}
}

// TestDeployConfDenies shows what each role of deploy/nats/nats.conf may
// not do: every case is refused by the server with a permission violation.
func TestDeployConfDenies(t *testing.T) {
	r := runDeployConf(t)
	tests := []struct {
		user, op, subject string
	}{
		// A worker serves tools; it cannot talk to agents, forge events or
		// final messages, call other tools, or read user input.
		{"toolworker", "Publish", "agent.in.default.demo"},
		{"toolworker", "Publish", "agent.ask.default.demo"},
		{"toolworker", "Publish", "agent.events.default.demo.run.end"},
		{"toolworker", "Publish", "agent.out.default.demo"},
		// (It may publish on agent.tool.>: a script's call_tool calls the
		// fleet.) Its JetStream rights are those of the scripts bucket's
		// watcher: it cannot write, purge or delete the bucket, nor read
		// another stream.
		{"toolworker", "Publish", "_INBOX.somebody.else"},
		{"toolworker", "Publish", "$KV.agent_tools.echo"},
		{"toolworker", "Publish", "$JS.API.STREAM.DELETE.KV_agent_tools"},
		{"toolworker", "Publish", "$JS.API.STREAM.PURGE.KV_agent_tools"},
		{"toolworker", "Publish", "$JS.API.STREAM.UPDATE.KV_agent_tools"},
		{"toolworker", "Publish", "$JS.API.STREAM.INFO.AGENT_HISTORY"},
		{"toolworker", "Publish", "$JS.API.CONSUMER.CREATE.AGENT_INPUT.c1"},
		{"toolworker", "Publish", "$JS.API.CONSUMER.CREATE.AGENT_EVENTS.c1"},
		{"toolworker", "Publish", "agent.history.default.demo"},
		{"toolworker", "Subscription", "agent.in.>"},
		{"toolworker", "Subscription", "agent.events.>"},
		// A dashboard publishes nothing that reaches an agent, a tool, a
		// worker or another client.
		{"dashboard", "Publish", "agent.in.default.demo"},
		{"dashboard", "Publish", "agent.ask.default.demo"},
		{"dashboard", "Publish", "agent.steer.default.demo"},
		{"dashboard", "Publish", "agent.abort.default.demo"},
		{"dashboard", "Publish", "agent.approve.default.demo"},
		{"dashboard", "Publish", "agent.events.default.demo.error"},
		{"dashboard", "Publish", "agent.out.default.demo"},
		{"dashboard", "Publish", "agent.tool.echo"},
		{"dashboard", "Publish", "agent.tool.echo.w1"}, // a worker's own subject
		{"dashboard", "Publish", "agent.worker.w1.cancel"},
		{"dashboard", "Publish", "agent.fleet"},
		{"dashboard", "Publish", "_INBOX.somebody.else"},
		{"dashboard", "Publish", "$JS.API.INFO"},
		// It reads the event stream with consumers of its own, and
		// touches no other stream, nor the event stream's data.
		{"dashboard", "Publish", "$JS.API.STREAM.DELETE.AGENT_EVENTS"},
		{"dashboard", "Publish", "$JS.API.STREAM.PURGE.AGENT_EVENTS"},
		{"dashboard", "Publish", "$JS.API.STREAM.UPDATE.AGENT_EVENTS"},
		{"dashboard", "Publish", "$JS.API.STREAM.MSG.DELETE.AGENT_EVENTS"},
		{"dashboard", "Publish", "$JS.API.CONSUMER.CREATE.AGENT_INPUT.c1"},
		{"dashboard", "Publish", "$JS.API.CONSUMER.CREATE.AGENT_HISTORY.c1"},
		{"dashboard", "Publish", "$JS.API.STREAM.INFO.AGENT_HISTORY"},
		{"dashboard", "Publish", "anything.else"},
		{"dashboard", "Subscription", "agent.in.>"},
		{"dashboard", "Subscription", "agent.tool.>"},
		// A client talks to agents, never to tools or workers.
		{"client", "Subscription", "agent.tool.>"},
		{"client", "Subscription", "agent.tool.echo"},
		{"client", "Subscription", "agent.tool.echo.w1"},
		{"client", "Subscription", "agent.worker.*.cancel"},
		{"client", "Subscription", "agent.in.>"},
		{"client", "Subscription", ">"},
		{"client", "Publish", "agent.tool.echo"},
		{"client", "Publish", "agent.tool.echo.w1"},
		{"client", "Publish", "agent.events.default.demo.run.end"},
		{"client", "Publish", "agent.out.default.demo"},
		{"client", "Publish", "agent.worker.w1.cancel"},
		{"client", "Publish", "agent.fleet"},
		{"client", "Publish", "$JS.API.INFO"},
		// The orchestrator cannot take tool calls meant for workers.
		{"orchestrator", "Subscription", "agent.tool.>"},
		// A person with read access (bob, of the dashboard role) talks to
		// no agent.
		{"bob", "Publish", "agent.in.default.demo"},
		{"bob", "Publish", "agent.ask.default.demo"},
		{"bob", "Publish", "agent.approve.default.demo"},
		{"bob", "Publish", "agent.abort.default.demo"},
		// Every user reads its own inbox space only: not every inbox, not
		// another user's.
		{"client", "Subscription", "_INBOX.>"},
		{"client", "Subscription", "_INBOX.*.>"},
		{"client", "Subscription", "_INBOX.alice.>"},
		{"alice", "Subscription", "_INBOX.>"},
		{"alice", "Subscription", "_INBOX.bob.>"},
		{"alice", "Subscription", "_INBOX.orchestrator.>"},
		{"alice", "Subscription", "_INBOX.orchestrator.abc.*"},
		{"bob", "Subscription", "_INBOX.>"},
		{"bob", "Subscription", "_INBOX.alice.>"},
		{"bob", "Subscription", "_INBOX.alice.abc.1"},
		{"dashboard", "Subscription", "_INBOX.>"},
		{"dashboard", "Subscription", "_INBOX.client.>"},
		{"toolworker", "Subscription", "_INBOX.>"},
		{"toolworker", "Subscription", "_INBOX.orchestrator.>"},
		{"orchestrator", "Subscription", "_INBOX.>"},
		{"orchestrator", "Subscription", "_INBOX.alice.>"},
		{"standalone", "Subscription", "_INBOX.>"},
		{"standalone", "Subscription", "_INBOX.alice.>"},
	}
	for _, tt := range tests {
		t.Run(tt.user+"/"+tt.op+"/"+tt.subject, func(t *testing.T) {
			nc, errs := r.connect(t, tt.user)
			var err error
			switch tt.op {
			case "Publish":
				err = nc.Publish(tt.subject, []byte("x"))
			case "Subscription":
				_, err = nc.Subscribe(tt.subject, func(*nats.Msg) {})
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
			wantViolation(t, errs, tt.op, tt.subject)
		})
	}
}

// TestDeployConfFleet runs the fleet's traffic under the roles of
// deploy/nats/nats.conf: a worker serves a tool that streams frames and
// honours a cancel, and the orchestrator discovers it and calls it.
func TestDeployConfFleet(t *testing.T) {
	r := runDeployConf(t)
	orch, orchErrs := r.connect(t, "orchestrator")
	worker, workerErrs := r.connect(t, "toolworker")
	subjects, _ := bus.NewSubjects("")

	// The worker's announcement reaches the orchestrator.
	joined := make(chan *nats.Msg, 4)
	if _, err := orch.ChanSubscribe(subjects.Fleet(), joined); err != nil {
		t.Fatal(err)
	}
	if err := orch.Flush(); err != nil {
		t.Fatal(err)
	}
	started, stopped := make(chan struct{}), make(chan error, 1)
	ts, err := toolrpc.Serve(worker, toolrpc.ServerConfig{
		Name: "permtest",
		Tools: []*agentfleet.Tool{
			{
				ToolDef: agentfleet.ToolDef{Name: "count", Description: "counts to 3 in progress frames"},
				Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
					for i := 1; i <= 3; i++ {
						call.Progress(i)
					}
					return agentfleet.TextResult("counted"), nil
				}),
			},
			{
				ToolDef: agentfleet.ToolDef{Name: "block", Description: "runs until cancelled"},
				Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
					close(started)
					<-ctx.Done()
					stopped <- context.Cause(ctx)
					return nil, ctx.Err()
				}),
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Stop() })
	select {
	case m := <-joined:
		var n fleet.FleetNotice
		if err := json.Unmarshal(m.Data, &n); err != nil || n.Event != "joined" || n.ID != ts.ID() {
			t.Errorf("fleet notice = %s (%v)", m.Data, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker's announcement did not reach the orchestrator")
	}

	ctx := context.Background()
	for _, user := range []string{"orchestrator", "dashboard", "client"} {
		nc := orch
		if user != "orchestrator" {
			nc, _ = r.connect(t, user)
		}
		found, err := fleet.Discover(ctx, nc, subjects, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if found["count"] == nil || found["block"] == nil {
			t.Errorf("%s discovered %v, want count and block", user, found)
		}
	}

	client, err := toolrpc.NewToolClient(orch, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var progress []any
	res, err := fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
		Tool: &agentfleet.Tool{}, Call: agentfleet.ToolCall{ID: "c1", Name: "count"}, Args: map[string]any{}, Timeout: 10 * time.Second,
	}, func(p any) { progress = append(progress, p) })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := agentfleet.JoinText(res.Content), "counted"; got != want {
		t.Errorf("result = %q, want %q", got, want)
	}
	if got, want := fmt.Sprint(progress), "[1 2 3]"; got != want {
		t.Errorf("progress = %s, want %s", got, want)
	}

	// A call the client sends to the worker's own subject,
	// agent.tool.<name>.<id>, which the roles allow as they allow
	// agent.tool.>.
	client.SetWorkers(map[string][]slots.Offer{"count": {{ID: ts.ID(), Limit: 64}}})
	res, err = fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
		Tool: &agentfleet.Tool{}, Call: agentfleet.ToolCall{ID: "c1d", Name: "count"}, Args: map[string]any{}, Timeout: 10 * time.Second,
	}, func(any) {})
	if err != nil || res.Worker != ts.Name() {
		t.Errorf("call on the worker's own subject: worker %v, err %v; want %s", res, err, ts.Name())
	}
	direct, _ := wire.EncodeRequest(&wire.CallRequest{V: wire.ProtocolVersion, ID: "c1e", Tool: "count"})
	if m, err := orch.Request(subjects.WorkerTool("count", ts.ID()), direct, 10*time.Second); err != nil {
		t.Errorf("request on the worker's own subject: %v", err)
	} else if f, err := wire.DecodeFrame(m.Data); err != nil || f.T != wire.FrameAck {
		t.Errorf("first answer on the worker's own subject = %+v (%v), want its ack", f, err)
	}

	// An aborted call is cancelled on the worker through
	// agent.worker.<id>.cancel.
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := fleetexec.Executor{Client: client}.Execute(cctx, &pipeline.Prepared{
			Tool: &agentfleet.Tool{}, Call: agentfleet.ToolCall{ID: "c2", Name: "block"}, Args: map[string]any{}, Timeout: time.Minute,
		}, func(any) {})
		done <- err
	}()
	<-started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("aborted call: err = %v", err)
	}
	select {
	case cause := <-stopped:
		if !errors.Is(cause, toolrpc.ErrCanceledByOrchestrator) {
			t.Errorf("the tool stopped because of %v, want the orchestrator's cancel", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel did not reach the worker")
	}

	for who, errs := range map[string]<-chan error{"orchestrator": orchErrs, "toolworker": workerErrs} {
		select {
		case err := <-errs:
			t.Errorf("%s: %v", who, err)
		default:
		}
	}
}

// TestDeployConfClient shows a client's ask reaching the orchestrator and
// its answer, events and final message coming back to the client and the
// dashboard.
func TestDeployConfClient(t *testing.T) {
	r := runDeployConf(t)
	orch, orchErrs := r.connect(t, "orchestrator")
	client, clientErrs := r.connect(t, "client")
	dash, _ := r.connect(t, "dashboard")
	subjects, _ := bus.NewSubjects("")

	pub := events.NewPublisher(orch, subjects, nil)
	got := make(chan *input.Inbound, 1)
	in := input.NewInput(orch, subjects, input.InputHandlerFunc(func(in *input.Inbound) error {
		if in.Kind == bus.KindApprove {
			in.ReplyDecision(&agentfleet.ApprovalReply{OK: true, ToolCallID: in.Decision.ToolCallID, Decision: agentfleet.ApprovalApproved})
			return nil
		}
		got <- in
		pub.Emit(&agentfleet.Event{Type: agentfleet.EventRunEnd, Agent: in.Agent, Session: in.Session, StopReason: agentfleet.StopReasonStop})
		final := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("hello, client")}, StopReason: agentfleet.StopReasonStop}
		pub.PublishOut(in.Agent, in.Session, final)
		in.Reply(final)
		return nil
	}), pub, nil)
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Stop() })

	watch := func(nc *nats.Conn, subject string) chan *nats.Msg {
		ch := make(chan *nats.Msg, 8)
		if _, err := nc.ChanSubscribe(subject, ch); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	clientEvents, clientOut := watch(client, "agent.events.>"), watch(client, "agent.out.>")
	dashEvents, dashOut := watch(dash, "agent.events.>"), watch(dash, "agent.out.>")

	reply, err := client.Request(subjects.Client(bus.KindAsk, "default", "demo"), []byte(`{"content":"hi"}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var final agentfleet.AssistantMessage
	if err := json.Unmarshal(reply.Data, &final); err != nil || agentfleet.JoinText(final.Content) != "hello, client" {
		t.Errorf("answer = %s (%v)", reply.Data, err)
	}
	select {
	case in := <-got:
		if in.Kind != bus.KindAsk || in.Agent != "default" || in.Session != "demo" || agentfleet.JoinText(in.Message.Content) != "hi" {
			t.Errorf("orchestrator received %+v", in)
		}
	default:
		t.Error("the orchestrator's input handler did not run")
	}
	for name, ch := range map[string]chan *nats.Msg{"client events": clientEvents, "client out": clientOut, "dashboard events": dashEvents, "dashboard out": dashOut} {
		select {
		case m := <-ch:
			if !strings.HasSuffix(m.Subject, ".default.demo") && !strings.HasSuffix(m.Subject, ".default.demo.run.end") {
				t.Errorf("%s: message on %s", name, m.Subject)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: nothing arrived", name)
		}
	}
	// A client decides a call that waits for approval, and hears back.
	reply, err = client.Request(subjects.Approve("default", "demo"), []byte(`{"tool_call_id":"c1","approve":true}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var decided agentfleet.ApprovalReply
	if err := json.Unmarshal(reply.Data, &decided); err != nil || !decided.OK || decided.ToolCallID != "c1" {
		t.Errorf("decision reply = %s (%v)", reply.Data, err)
	}
	for who, errs := range map[string]<-chan error{"orchestrator": orchErrs, "client": clientErrs} {
		select {
		case err := <-errs:
			t.Errorf("%s: %v", who, err)
		default:
		}
	}
}

// TestDeployConfStandalone runs what `orchestrator --workers N` does on one
// user: a worker and a tool client, and the input subscriptions, on the
// standalone user's connection.
func TestDeployConfStandalone(t *testing.T) {
	r := runDeployConf(t)
	nc, errs := r.connect(t, "standalone")
	ts, err := toolrpc.Serve(nc, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{{
		ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echo"},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult(fmt.Sprint(call.Arguments["text"])), nil
		}),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ts.Stop() })
	subjects, _ := bus.NewSubjects("")
	in := input.NewInput(nc, subjects, input.InputHandlerFunc(func(*input.Inbound) error { return nil }), nil, nil)
	if err := in.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Stop() })
	found, err := fleet.Discover(context.Background(), nc, subjects, 10*time.Second)
	if err != nil || found["echo"] == nil {
		t.Fatalf("discovered %v (%v)", found, err)
	}
	client, err := toolrpc.NewToolClient(nc, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	res, err := fleetexec.Executor{Client: client}.Execute(context.Background(), &pipeline.Prepared{
		Tool: &agentfleet.Tool{}, Call: agentfleet.ToolCall{ID: "s1", Name: "echo"}, Args: map[string]any{"text": "alone"}, Timeout: 10 * time.Second,
	}, func(any) {})
	if err != nil || agentfleet.JoinText(res.Content) != "alone" {
		t.Fatalf("echo = %v, %v", res, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Errorf("standalone: %v", err)
	default:
	}
}

// TestDeployConfInboxes: each user hears the replies to its requests in its
// own inbox space, and a user that keeps nats.go's shared _INBOX prefix is
// refused at its first request, so that it cannot read another user's
// replies there.
func TestDeployConfInboxes(t *testing.T) {
	r := runDeployConf(t)
	orch, orchErrs := r.connect(t, "orchestrator")
	subjects, _ := bus.NewSubjects("")
	asked := make(chan string, 4)
	sub, err := orch.Subscribe(subjects.Client(bus.KindAsk, "default", "*"), func(m *nats.Msg) {
		asked <- m.Reply
		m.Respond([]byte("answer to " + string(m.Data)))
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := orch.Flush(); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"client", "alice"} {
		nc, errs := r.connect(t, user)
		reply, err := nc.Request(subjects.Client(bus.KindAsk, "default", user), []byte(user), 10*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		if string(reply.Data) != "answer to "+user {
			t.Errorf("%s: reply %q", user, reply.Data)
		}
		// The people are in an account of their own: the fleet sees the
		// reply the server mapped, never the person's inbox.
		if got := <-asked; !strings.HasPrefix(got, bus.ServiceImportReply+".") {
			t.Errorf("%s asked with reply subject %q, want it mapped under %s.", user, got, bus.ServiceImportReply)
		}
		select {
		case err := <-errs:
			t.Errorf("%s: %v", user, err)
		default:
		}
	}
	// Alice with the shared prefix, or with bob's: her requests' inbox
	// subscription is refused, and she hears nothing.
	for _, prefix := range []string{"_INBOX", "_INBOX.bob"} {
		nc, errs := r.connectInbox(t, "alice", prefix)
		_, err := nc.Request(subjects.Client(bus.KindAsk, "default", "alice"), []byte("alice"), 2*time.Second)
		if err == nil {
			t.Errorf("alice with inbox prefix %s heard a reply", prefix)
		}
		wantViolationUnder(t, errs, "Subscription", prefix+".")
		// The ask itself went through, and its answer to nobody.
		select {
		case got := <-asked:
			if !strings.HasPrefix(got, bus.ServiceImportReply+".") {
				t.Errorf("reply subject %q, want it mapped under %s.", got, bus.ServiceImportReply)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("alice's ask with inbox prefix %s did not arrive", prefix)
		}
	}
	select {
	case err := <-orchErrs:
		t.Errorf("orchestrator: %v", err)
	default:
	}
}
