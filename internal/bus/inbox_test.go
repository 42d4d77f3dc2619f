package bus

import (
	"strings"
	"testing"
)

func TestInboxPrefix(t *testing.T) {
	tests := []struct {
		name, explicit, user string
		want, err            string
	}{
		{name: "no user", want: "_INBOX"},
		{name: "user", user: "alice", want: "_INBOX.alice"},
		{name: "user with a dash", user: "tool-worker_2", want: "_INBOX.tool-worker_2"},
		{name: "dotted user", user: "alice.smith", want: "_INBOX"},
		{name: "user with a space", user: "alice smith", want: "_INBOX"},
		{name: "user with a wildcard", user: "al*", want: "_INBOX"},
		{name: "user the fleet could not answer", user: "alice@example", want: "_INBOX"},
		{name: "explicit wins", explicit: "_INBOX.team1", user: "alice", want: "_INBOX.team1"},
		{name: "explicit default", explicit: "_INBOX", user: "alice", want: "_INBOX"},
		{name: "explicit deeper", explicit: "_INBOX.alice.laptop", want: "_INBOX.alice.laptop"},
		// Hostile or mistaken prefixes are refused, saying what is wrong.
		{name: "outside the inbox space", explicit: "_INBOX_alice", err: `inbox prefix "_INBOX_alice": must be _INBOX or start with _INBOX.`},
		{name: "a stream's subjects", explicit: "$KV.agent_tools", err: `inbox prefix "$KV.agent_tools": must be _INBOX or start with _INBOX.`},
		{name: "an agent's subjects", explicit: "agent.out.default.demo", err: "must be _INBOX or start with _INBOX."},
		{name: "every inbox", explicit: "_INBOX.>", err: `inbox prefix "_INBOX.>": has a wildcard (">")`},
		{name: "every user", explicit: "_INBOX.*", err: `has a wildcard ("*")`},
		{name: "wildcard inside a token", explicit: "_INBOX.a*", err: `has a wildcard ("a*")`},
		{name: "trailing dot", explicit: "_INBOX.alice.", err: "has an empty token"},
		{name: "double dot", explicit: "_INBOX..alice", err: "has an empty token"},
		{name: "space", explicit: "_INBOX.al ice", err: "has white space"},
		{name: "a token the fleet does not answer", explicit: "_INBOX.über", err: `token "über" may hold only letters, digits, '-' and '_'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := InboxPrefix(tt.explicit, tt.user)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("InboxPrefix(%q, %q) = %q, %v; want error %q", tt.explicit, tt.user, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("InboxPrefix(%q, %q) = %q, %v; want %q", tt.explicit, tt.user, got, err, tt.want)
			}
		})
	}
}
