package hostile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestInboxesKeptApart: a person of the shipped configuration cannot read
// the inbox space where everyone's replies arrive, nor another person's;
// the server refuses the subscription, and the person's own asks are still
// answered.
func TestInboxesKeptApart(t *testing.T) {
	f := startFleet(t)
	for _, c := range []struct{ user, subject string }{
		{"client", "_INBOX.>"},
		{"alice", "_INBOX.>"},
		{"alice", "_INBOX.bob.>"},
		{"alice", "_INBOX.client.>"},
		{"bob", "_INBOX.alice.>"},
		{"alice", "_R_.>"},
	} {
		t.Run(c.user+" "+c.subject, func(t *testing.T) {
			errs := make(chan error, 4)
			nc, err := nats.Connect(f.srv.ClientURL(), nats.UserInfo(c.user, f.passwords[c.user]), nats.CustomInboxPrefix("_INBOX."+c.user),
				nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.SubscribeSync(c.subject); err != nil {
				t.Fatal(err)
			}
			nc.Flush()
			select {
			case err := <-errs:
				if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), c.subject) {
					t.Fatalf("error %v, want a permission violation for %s", err, c.subject)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s subscribed to %s with no permission violation", c.user, c.subject)
			}
			if c.user != "bob" {
				if got := ask(t, nc, c.user+"-own", "mine"); got != "echo: mine" {
					t.Errorf("%s's own ask answered %q", c.user, got)
				}
			}
		})
	}
}
