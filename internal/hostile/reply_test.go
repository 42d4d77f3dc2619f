package hostile_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// canary is a stream the spy creates, that a reply on the JetStream API
// would delete.
const canary = "HOSTILE_CANARY"

// hostileReplies are reply subjects a client puts on its requests to have
// whoever answers publish there with the answerer's rights: a key of each
// KV bucket of the fleet, a session's history, input, final messages and
// events, and the JetStream API. No process of the fleet writes any of
// them itself, so anything stored or seen there came from an attack.
var hostileReplies = []string{
	"$KV.agent_tools.hostile",
	"$KV.AGENT_PARTITIONS.hostile",
	"agent.history.default.hostile",
	"agent.in.default.hostile",
	"agent.out.default.hostile",
	"agent.events.default.hostile.run.end",
	"$JS.API.STREAM.DELETE." + canary,
}

// attack is one request a client may send, sent with every hostile reply.
type attack struct{ name, subject, data string }

// clientAttacks are the requests a client of the shipped configuration may
// send.
var clientAttacks = []attack{
	{"tool list", "agent.ask.default", ""},
	{"ask", "agent.ask.default.victim", "hello"},
	{"ask of an unknown agent", "agent.ask.nobody.victim", "hello"},
	{"abort", "agent.abort.default.victim", "stop"},
	{"approval decision", "agent.approve.default.victim", `{"tool_call_id":"call_1","approve":true}`},
	{"approval decision that does not parse", "agent.approve.default.victim", `{`},
	{"in", "agent.in.default.victim", "hello"},
	{"steer", "agent.steer.default.victim", "hello"},
	{"micro ping", "$SRV.PING", ""},
	{"micro info", "$SRV.INFO", ""},
	{"micro stats", "$SRV.STATS", ""},
	{"micro info of the workers", "$SRV.INFO.toolworker", ""},
}

// fleetAttacks are requests that only users of the fleet's own account may
// send; sent by such a user, the processes' own reply guard is all that
// stands between the request and a publish with the answerer's rights.
var fleetAttacks = []attack{
	{"direct tool call", "agent.call.default.victim", `{"id":"c1","name":"echo","arguments":{"text":"x"}}`},
	// A request that does not parse is answered at once, in order with the
	// inbox request after it (a dry run that runs is answered from a
	// goroutine, in no order the test could wait on).
	{"dry run of a scripted tool", "agent.scripts.dryrun", `{`},
	{"a worker's tool", "agent.tool.echo", ""},
}

// TestRepliesOnlyToInboxes sends every request a client may send to the
// fleet, each with every hostile reply subject, as the shipped client user.
// Whatever answers (the orchestrator, a worker, JetStream itself) must not
// publish on any of them: the spy, subscribed to each, sees nothing, and
// the server stores nothing there; the canary stream survives; and the
// fleet goes on answering asks and running tools.
func TestRepliesOnlyToInboxes(t *testing.T) {
	f := startFleet(t)
	attacker := f.connect(t, "client")
	replyAttacks(t, f, attacker, clientAttacks)
}

// TestRepliesOnlyToInboxesInsideTheFleet sends the requests again from a
// user of the fleet's own account, with every right: no account boundary
// maps its replies, so the processes' reply guard alone must refuse them.
// (in and steer are left out: JetStream, not the fleet, answers those,
// which is why people are kept out of this account.)
func TestRepliesOnlyToInboxesInsideTheFleet(t *testing.T) {
	f := startFleet(t)
	attacker := f.connect(t, "spy")
	var attacks []attack
	for _, a := range append(clientAttacks, fleetAttacks...) {
		if a.name != "in" && a.name != "steer" {
			attacks = append(attacks, a)
		}
	}
	replyAttacks(t, f, attacker, attacks)
}

func replyAttacks(t *testing.T, f *fleet, attacker *nats.Conn, attacks []attack) {
	spy := f.connect(t, "spy")
	js, err := jetstream.New(spy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx(t, 10*time.Second), jetstream.StreamConfig{Name: canary, Subjects: []string{"hostile.canary"}}); err != nil {
		t.Fatal(err)
	}
	seen := make(chan *nats.Msg, 1024)
	for _, subject := range hostileReplies {
		if _, err := spy.ChanSubscribe(subject, seen); err != nil {
			t.Fatal(err)
		}
	}
	spy.Flush()

	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			for _, reply := range hostileReplies {
				if err := attacker.PublishRequest(a.subject, reply, []byte(a.data)); err != nil {
					t.Fatal(err)
				}
			}
			if err := attacker.Flush(); err != nil {
				t.Fatal(err)
			}
			// The same request with an inbox: once it is answered, or once
			// an ask after it is, the hostile ones were handled.
			if _, err := attacker.Request(a.subject, []byte(a.data), 10*time.Second); err != nil && !errors.Is(err, nats.ErrTimeout) {
				t.Logf("%s with an inbox: %v", a.subject, err)
			}
			if got := ask(t, attacker, "probe", "still there?"); got != "echo: still there?" {
				t.Fatalf("after the attack, an ask was answered %q", got)
			}
			checkNothingPublished(t, seen)
		})
	}

	// What the server stores, whatever was seen.
	for _, reply := range hostileReplies {
		if strings.HasPrefix(reply, "$JS.API.") {
			continue
		}
		streams := js.StreamNames(ctx(t, 10*time.Second), jetstream.WithStreamListSubject(reply))
		for name := range streams.Name() {
			s, err := js.Stream(ctx(t, 10*time.Second), name)
			if err != nil {
				t.Fatal(err)
			}
			if m, err := s.GetLastMsgForSubject(ctx(t, 10*time.Second), reply); err == nil {
				t.Errorf("stream %s stores a message on %s: %.200s", name, reply, m.Data)
			} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Errorf("stream %s, subject %s: %v", name, reply, err)
			}
		}
	}
	if _, err := js.Stream(ctx(t, 10*time.Second), canary); err != nil {
		t.Errorf("the canary stream is gone: %v", err)
	}
	// The fleet still runs tools.
	if got := ask(t, attacker, "after", `call echo {"text":"fine"}`); !strings.Contains(got, "fine") {
		t.Errorf("a tool call after the attacks was answered %q", got)
	}
	checkNothingPublished(t, seen)
}

// checkNothingPublished fails the test for every message the spy saw on a
// hostile subject.
func checkNothingPublished(t *testing.T, seen <-chan *nats.Msg) {
	t.Helper()
	for {
		select {
		case m := <-seen:
			t.Errorf("published on %s: %.200s", m.Subject, m.Data)
		default:
			return
		}
	}
}
