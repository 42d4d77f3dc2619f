package bus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus"
)

func TestReplyGuardCheck(t *testing.T) {
	var g bus.ReplyGuard
	cases := []struct {
		name, reply string
		ok          bool
		why         string
	}{
		{"nats.go inbox", "_INBOX.X7b2kQ9wz1", true, ""},
		{"nats.go response mux", "_INBOX.X7b2kQ9wz1.a8Kz", true, ""},
		{"per-user inbox", "_INBOX.alice.Zq81", true, ""},
		{"service import reply", "_R_.a8Kz9Q.T7", true, ""},
		{"bare service import prefix", "_R_", false, "not an inbox"},
		{"empty", "", false, "no reply subject"},
		{"bare inbox prefix", "_INBOX", false, "not an inbox"},
		{"inbox prefix with dot", "_INBOX.", false, "not a plain subject"},
		{"lookalike prefix", "_INBOXES.x", false, "not an inbox"},
		{"custom prefix outside _INBOX", "_INBOX_alice.x", false, "not an inbox"},
		{"KV put of a scripted tool", "$KV.agent_tools.double", false, "not a plain subject"},
		{"KV put of a partition", "$KV.AGENT_PARTITIONS.33", false, "not a plain subject"},
		{"JetStream API", "$JS.API.STREAM.DELETE.AGENT_INPUT", false, "not a plain subject"},
		{"system account", "$SYS.REQ.SERVER.PING", false, "not a plain subject"},
		{"micro discovery", "$SRV.INFO", false, "not a plain subject"},
		{"a session's history", "agent.history.default.demo", false, "not an inbox"},
		{"a session's final messages", "agent.out.default.victim", false, "not an inbox"},
		{"a session's events", "agent.events.default.victim.run.end", false, "not an inbox"},
		{"a tool's endpoint", "agent.tool.echo", false, "not an inbox"},
		{"input of another session", "agent.in.default.victim", false, "not an inbox"},
		{"the fleet subject", "agent.fleet", false, "not an inbox"},
		{"wildcard token", "_INBOX.*", false, "not a plain subject"},
		{"full wildcard", "_INBOX.>", false, "not a plain subject"},
		{"wildcard inside", "_INBOX.a.*.b", false, "not a plain subject"},
		{"empty token", "_INBOX..x", false, "not a plain subject"},
		{"trailing dot", "_INBOX.x.", false, "not a plain subject"},
		{"space", "_INBOX.x y", false, "not a plain subject"},
		{"newline (protocol injection)", "_INBOX.x\r\nPUB agent.out.default.v 2\r\nhi", false, "not a plain subject"},
		{"non-ASCII", "_INBOX.ü", false, "not a plain subject"},
		{"too long", "_INBOX." + strings.Repeat("a", 600), false, "the limit is 512"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := g.Check(c.reply)
			if c.ok {
				if err != nil {
					t.Fatalf("Check(%q) = %v, want nil", c.reply, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Check(%q) = nil, want a refusal", c.reply)
			}
			if !errors.Is(err, bus.ErrReplyRefused) {
				t.Errorf("Check(%q) = %v, want it to wrap bus.ErrReplyRefused", c.reply, err)
			}
			if !strings.Contains(err.Error(), c.why) {
				t.Errorf("Check(%q) = %v, want it to say %q", c.reply, err, c.why)
			}
		})
	}
}

func TestReplyGuardInboxes(t *testing.T) {
	g := bus.ReplyGuard{Inboxes: []string{"_INBOX", "acme.replies"}}
	for reply, ok := range map[string]bool{
		"_INBOX.a":         true,
		"acme.replies.a.b": true,
		"acme.replies":     false,
		"acme.other.a":     false,
	} {
		if err := g.Check(reply); (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok %v", reply, err, ok)
		}
	}
}
