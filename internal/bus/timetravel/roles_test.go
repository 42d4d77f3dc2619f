package timetravel_test

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

// TestRolesFork runs the deployed server configuration: the orchestrator
// may take fork requests, and neither the client nor the dashboard role may
// send one (a fork copies a whole session's history into a session its
// sender could then ask about; it is an operator's act).
func TestRolesFork(t *testing.T) {
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
	orch, orchErrs := connect("orchestrator")
	sub, err := orch.QueueSubscribe("agent.fork.*.*", "q", func(m *nats.Msg) { m.Respond([]byte(`{}`)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := orch.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-orchErrs:
		t.Fatalf("orchestrator: %v", err)
	default:
	}
	for _, user := range []string{"client", "dashboard", "alice", "bob"} {
		nc, errs := connect(user)
		if err := nc.Publish("agent.fork.default.s1", []byte(`{"new_session":"s2"}`)); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Permissions Violation for Publish to %q", "agent.fork.default.s1")
		select {
		case err := <-errs:
			if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %v, want %q", user, err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s may publish a fork request", user)
		}
	}
}
