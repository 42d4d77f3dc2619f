package profile

import (
	"strings"
	"testing"
)

// TestRemoteAgents: a profile's remote_agents are read, and a bad entry
// is refused with what is wrong and where.
func TestRemoteAgents(t *testing.T) {
	ps, err := Parse([]byte("agents:\n  - name: a\n    remote_agents:\n      - name: partner\n        url: https://partner.example/a2a/default\n        auth: {token_env: PARTNER_TOKEN}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := ps[0].RemoteAgents; len(r) != 1 || r[0].Name != "partner" || r[0].Auth.TokenEnv != "PARTNER_TOKEN" {
		t.Errorf("remote agents = %+v", r)
	}
	for _, c := range []struct{ name, entries, want string }{
		{"bad name", "- {name: 'a.b', url: 'http://x/'}", `remote_agents entry 1: remote agent name "a.b" may hold only`},
		{"twice", "- {name: p, url: 'http://x/'}\n      - {name: p, url: 'http://y/'}", `remote_agents entry 2: "p" is listed twice`},
		{"also local", "- {name: b, url: 'http://x/'}", `"b" is listed twice (in agents or remote_agents)`},
		{"file URL", "- {name: p, url: 'file:///etc/passwd'}", `url "file:///etc/passwd" is not an http or https URL`},
		{"no host", "- {name: p, url: 'http:///x'}", `is not an http or https URL`},
		{"two tokens", "- {name: p, url: 'http://x/', auth: {token_env: A, token_file: /t}}", "both token_env and token_file"},
		{"unknown field", "- {name: p, url: 'http://x/', token: s3cret}", "field token not found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte("agents:\n  - name: b\n  - name: a\n    agents: [b]\n    remote_agents:\n      " + c.entries + "\n"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}
