package erase_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/objref"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRolesDelete runs the deployed server configuration: the orchestrator
// may take delete requests, and send and take the stops of a session being
// deleted; neither the client, the dashboard, a person's role nor a tool
// worker may send either (a delete removes a session's records everywhere:
// an operator's act; a stop drops a session from its owner's memory). The
// orchestrator marks the runs a delete stopped in the erased bucket, which
// a worker may read and not write.
func TestRolesDelete(t *testing.T) {
	conf := filepath.Join("..", "..", "..", "deploy", "nats", "nats.conf")
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string]string{}
	for _, u := range opts.Users {
		pw[u.Username] = u.Password
	}
	s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	connect := func(user string) (*nats.Conn, <-chan error) {
		errs := make(chan error, 16)
		nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(user, pw[user]), nats.CustomInboxPrefix("_INBOX."+user),
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
	for _, user := range []string{"orchestrator", "standalone"} {
		orch, errs := connect(user)
		for _, subject := range []string{"agent.delete.*.*", "agent.erase.*.*"} {
			if _, err := orch.QueueSubscribe(subject, "q", func(m *nats.Msg) { m.Respond([]byte(`{}`)) }); err != nil {
				t.Fatal(err)
			}
		}
		if err := orch.Publish("agent.erase.default.s1", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if err := orch.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errs:
			t.Fatalf("%s: %v", user, err)
		default:
		}
	}
	// The orchestrator marks the runs it stopped; a worker reads the mark
	// after it stores an object of such a run.
	orch, _ := connect("orchestrator")
	ojs, _ := jetstream.New(orch)
	ctx := context.Background()
	st, err := objref.Open(ctx, ojs, objref.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.MarkErased(ctx, "default", "s1", []string{"r1"}); err != nil {
		t.Fatal(err)
	}
	worker, werrs := connect("toolworker")
	wjs, _ := jetstream.New(worker)
	kv, err := wjs.KeyValue(ctx, objref.ErasedBucket)
	if err != nil {
		t.Fatalf("toolworker: %v", err)
	}
	if _, err := kv.Get(ctx, "default.s1.r1"); err != nil {
		t.Fatalf("toolworker reads the mark: %v", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if _, err := kv.Put(pctx, "default.s1.r2", nil); err == nil {
		t.Fatal("toolworker may write the erased bucket")
	}
	select {
	case err := <-werrs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("toolworker put: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("toolworker may write the erased bucket")
	}
	for _, user := range []string{"client", "dashboard", "alice", "bob", "toolworker"} {
		for _, subject := range []string{"agent.delete.default.s1", "agent.erase.default.s1"} {
			nc, errs := connect(user)
			if err := nc.Publish(subject, []byte(`{"confirm":"s1"}`)); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("Permissions Violation for Publish to %q", subject)
			select {
			case err := <-errs:
				if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), want) {
					t.Fatalf("%s: %v, want %q", user, err, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s may publish on %s", user, subject)
			}
		}
	}
}
