package erase_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// TestRolesDelete runs the deployed server configuration: the orchestrator
// may take delete requests, and send and take the stops of a session being
// deleted; neither the client, the dashboard, a person's role nor a tool
// worker may send either (a delete removes a session's records everywhere:
// an operator's act; a stop drops a session from its owner's memory).
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
