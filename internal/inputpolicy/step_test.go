package inputpolicy

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// session is a session that is loaded and serving, with room in its queue.
func session() State { return State{Taken: true, Loaded: true, Limit: 10, Leased: true} }

// with returns a session that knows m of the delivery's id.
func with(m Message) State {
	s := session()
	s.Msg = m
	return s
}

func render(acts []Action) []string {
	out := []string{}
	for _, a := range acts {
		out = append(out, a.String())
	}
	return out
}

func TestStep(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := Delivery{Kind: In, Agent: "a", Session: "s", ID: "m1", Seq: 7, Count: 1, Durable: true}
	ask := Delivery{Kind: Ask, Agent: "a", Session: "s", ID: "m1", Reply: true}
	relayed := Delivery{Kind: Ask, Agent: "a", Session: "s", ID: "m1", Seq: 7, Count: 1, Durable: true, Reply: true}
	steer := Delivery{Kind: Steer, Agent: "a", Session: "s", ID: "m1", Seq: 7, Count: 1, Durable: true}
	abort := Delivery{Kind: Abort, Agent: "a", Session: "s", Reason: "enough", Reply: true, At: at}
	decision := Delivery{Kind: Decision, Agent: "a", Session: "s", Seq: 9, Count: 1, Durable: true}
	redelivered := func(d Delivery, seq uint64, count uint64) Delivery { d.Seq, d.Count = seq, count; return d }
	scanned := func(d Delivery) Delivery { d.Scanned, d.Durable, d.Count = true, false, 0; return d }
	notTaken := func(owned, inMemory bool) State { return State{Owned: owned, InMemory: inMemory} }
	loading := func(backlog int) State { s := session(); s.Loaded, s.Backlog = false, backlog; return s }
	full := func() State { s := session(); s.Queued = s.Limit; return s }
	unleased := func(s State) State { s.Leased = false; return s }
	queued := Message{Seen: true, Seq: 7, Delivered: true}
	running := Message{Seen: true, Run: "r1", Seq: 7, Delivered: true}
	resumed := Message{Seen: true, Run: "r1"} // known from the history after a restart
	readAtLoad := Message{Seen: true, Seq: 7}
	answered := Message{Seen: true, Run: "r1", Ended: true, Seq: 7, Delivered: true}
	answeredBefore := Message{Seen: true, Run: "r1", Ended: true} // ended before a restart
	copyAnswered := func(seq uint64) Message { m := answered; m.Answered = seq; return m }
	replied := func(m Message, seq uint64) Message { m.Replied = seq; return m }

	tests := []struct {
		name  string
		state State
		d     Delivery
		want  []string
		msg   Message // what the session knows of the id after
	}{
		// Before a session takes it.
		{"durable input of a partition served here", notTaken(true, false), in, []string{"take loading"}, Message{}},
		{"core input needs no partition", notTaken(false, false), ask, []string{"take loading"}, Message{}},
		{"handover: the partition moved while the message was in flight", notTaken(false, false), in, []string{"nak"}, Message{}},
		{"handover of a decision", notTaken(false, false), decision, []string{"nak"}, Message{}},
		{"decision taken by its session", notTaken(true, false), decision, []string{"take loading"}, Message{}},
		{"abort of a session in memory", notTaken(false, true), abort, []string{"take"}, Message{}},
		{"abort for a run that is not there: no session in memory", notTaken(false, false), abort, []string{"reject: session s of agent a has no active run to abort"}, Message{}},
		{"unknown kind", notTaken(true, false), Delivery{Kind: "poke"}, []string{`reject: unknown input kind "poke"`}, Message{}},

		// The session, before its policy of ids.
		{"session evicted meanwhile", State{Taken: true, Evicted: true, Loaded: true, Limit: 10}, in, []string{"retake"}, Message{}},
		{"session being handed over", State{Taken: true, Stopped: errors.New("lost"), Loaded: true, Limit: 10}, in,
			[]string{"retry: session s is being handed over: lost"}, Message{}},
		{"input while the session loads", loading(0), in, []string{"hold"}, Message{}},
		{"an abort while the session loads waits too", loading(3), abort, []string{"hold"}, Message{}},
		{"input while the session loads, backlog full", loading(10), in,
			[]string{"retry: session s of agent a has 10 messages waiting, the limit is 10"}, Message{}},

		// A new id.
		{"new message", session(), in, []string{"count accepted", "wait", "start"}, Message{Seen: true, Seq: 7, Delivered: true}},
		{"new ask", session(), ask, []string{"count accepted", "wait", "start"}, Message{Seen: true, Delivered: true}},
		{"new steer", session(), steer, []string{"count accepted", "wait", "start steering"}, Message{Seen: true, Seq: 7, Delivered: true}},
		{"new message, queue full", full(), in, []string{"retry: session s of agent a has 10 messages queued, the limit is 10"}, Message{}},
		{"read from the stream at load", session(), scanned(in), []string{"start"}, readAtLoad},
		{"relayed ask read from the stream at load waits for its run", session(), scanned(relayed), []string{"wait", "start"}, replied(readAtLoad, 7)},
		{"new relayed ask", session(), relayed, []string{"count accepted", "wait", "start"}, replied(queued, 7)},
		{"read from the stream at load, queue full", full(), scanned(in), []string{}, Message{}},

		// An id whose run is queued, in flight or resumed.
		{"redelivery while queued", with(queued), redelivered(in, 7, 2), []string{"count duplicate", "wait"}, queued},
		{"another copy while queued", with(queued), redelivered(in, 8, 1), []string{"count duplicate", "wait"}, queued},
		{"retried ask: same id again while its run is in flight", with(running), ask, []string{"count duplicate", "wait"}, running},
		{"redelivery while its run is in flight", with(running), redelivered(in, 7, 2), []string{"count duplicate", "wait"}, running},
		{"resumed run after a restart: its first delivery here", with(resumed), redelivered(in, 7, 3), []string{"count accepted", "wait"},
			Message{Seen: true, Run: "r1", Delivered: true}},
		{"resumed run after a restart: a retried ask", with(resumed), ask, []string{"count accepted", "wait"}, Message{Seen: true, Run: "r1", Delivered: true}},
		{"delivery of a message read from the stream at load", with(readAtLoad), in, []string{"count accepted", "wait"}, queued},
		{"read again at load while its run goes on", with(running), scanned(in), []string{}, running},
		{"relayed ask read at load joins the resumed run", with(resumed), scanned(relayed), []string{"wait"}, replied(resumed, 7)},
		// One answer per relayed ask: the copy read at load answers it,
		// its delivery (or a redelivery) is only settled.
		{"delivery of a relayed ask read from the stream at load", with(replied(readAtLoad, 7)), relayed, []string{"count accepted", "wait silent"}, replied(queued, 7)},
		{"redelivery of a relayed ask waiting for its run", with(replied(running, 7)), redelivered(relayed, 7, 2), []string{"count duplicate", "wait silent"}, replied(running, 7)},
		{"relayed ask read again at load while its run goes on", with(replied(running, 7)), scanned(relayed), []string{}, replied(running, 7)},
		{"an earlier relayed ask delivered again after a later one waits", with(replied(running, 9)), redelivered(relayed, 7, 2), []string{"count duplicate", "wait silent"}, replied(running, 9)},
		{"relayed ask sent again with the same id while its run goes on", with(replied(running, 7)), redelivered(relayed, 9, 1), []string{"count duplicate", "wait"}, replied(running, 9)},
		{"delivery of a relayed ask read at load for a resumed run", with(replied(resumed, 7)), redelivered(relayed, 7, 3), []string{"count accepted", "wait silent"},
			Message{Seen: true, Run: "r1", Delivered: true, Replied: 7}},
		{"steer copy of a message in flight", with(running), redelivered(steer, 7, 2), []string{"count duplicate", "wait"}, running},

		// An id whose run ended: answered from the store, not run twice.
		{"redelivery after the answer was stored", with(answered), redelivered(in, 7, 2), []string{"count duplicate", "ack"}, answered},
		{"redelivery after the answer was stored, before a restart", with(answeredBefore), redelivered(in, 7, 2), []string{"count duplicate", "ack"}, answeredBefore},
		{"message sent again after its answer was stored", with(answered), redelivered(in, 12, 1), []string{"count duplicate", "publish r1", "ack"}, copyAnswered(12)},
		// One answer once: the copy's ack was lost as the server died, or
		// the copy was delivered twice while its session loaded.
		{"redelivery of a copy already answered again", with(copyAnswered(12)), redelivered(in, 12, 2), []string{"count duplicate", "ack"}, copyAnswered(12)},
		{"copy delivered twice while its session loaded", with(copyAnswered(12)), redelivered(in, 12, 1), []string{"count duplicate", "ack"}, copyAnswered(12)},
		{"an earlier copy delivered again after a later one was answered", with(copyAnswered(13)), redelivered(in, 12, 2), []string{"count duplicate", "ack"}, copyAnswered(13)},
		{"a later copy after one was answered again", with(copyAnswered(12)), redelivered(in, 13, 1), []string{"count duplicate", "publish r1", "ack"}, copyAnswered(13)},
		{"ask sent again after its answer was stored", with(answered), ask, []string{"count duplicate", "answer r1"}, answered},
		{"relayed ask sent again after its answer was stored", with(answered), redelivered(relayed, 12, 1), []string{"count duplicate", "answer r1", "ack"}, replied(answered, 12)},
		{"relayed ask redelivered after it was answered here (its ack lost)", with(replied(answered, 7)), redelivered(relayed, 7, 2), []string{"count duplicate", "ack"}, replied(answered, 7)},
		{"relayed ask read at load answered from the store, then delivered", with(replied(answered, 12)), redelivered(relayed, 12, 1), []string{"count duplicate", "ack"}, replied(answered, 12)},
		{"relayed ask redelivered after a restart: answered again from the store", with(answeredBefore), redelivered(relayed, 7, 2), []string{"count duplicate", "answer r1", "ack"}, replied(answeredBefore, 7)},
		{"stored answer without the lease: not acked", unleased(with(answered)), redelivered(in, 12, 1), []string{"count duplicate", "publish r1"}, copyAnswered(12)},
		{"answered message read from the stream at load", with(answered), scanned(redelivered(in, 12, 1)), []string{}, answered},
		{"answered relayed ask read from the stream at load", with(answered), scanned(relayed), []string{"answer r1"}, replied(answered, 7)},
		{"answered relayed ask read at load after its answer here", with(replied(answered, 7)), scanned(relayed), []string{}, replied(answered, 7)},

		// Abort and decision.
		{"abort goes to the active run", session(), abort, []string{"abort enough"}, Message{}},
		{"decision goes to the approval gate", session(), decision, []string{"gate"}, Message{}},
		{"decision read from the stream at load settles nothing", session(), scanned(decision), []string{}, Message{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, acts := Step(tt.state, tt.d)
			if got := render(acts); !slices.Equal(got, tt.want) {
				t.Errorf("Step(%+v, %+v) actions:\n  got  %q\n  want %q", tt.state, tt.d, got, tt.want)
			}
			if st.Msg != tt.msg {
				t.Errorf("Step(%+v, %+v) message after: got %+v, want %+v", tt.state, tt.d, st.Msg, tt.msg)
			}
			rest := st
			rest.Msg = tt.state.Msg
			if rest != tt.state {
				t.Errorf("Step changed more than the message: %+v, was %+v", st, tt.state)
			}
		})
	}
}

func TestAborted(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	abort := Delivery{Kind: Abort, Agent: "a", Session: "s", Reason: "enough", At: at}
	asked := abort
	asked.Reply = true
	tests := []struct {
		name string
		d    Delivery
		ok   bool
		want []string
	}{
		{"run aborted, asked", asked, true, []string{"reply aborted enough at 2026-01-02T03:04:05Z"}},
		{"run aborted, published", abort, true, []string{}},
		{"abort for a run that is not there: the loop had none", asked, false, []string{"reject: session s of agent a has no active run to abort"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Aborted(tt.d, tt.ok)); !slices.Equal(got, tt.want) {
				t.Errorf("Aborted(%+v, %v) = %q, want %q", tt.d, tt.ok, got, tt.want)
			}
		})
	}
}

func TestDecided(t *testing.T) {
	durable := Delivery{Kind: Decision, Agent: "a", Session: "s", Seq: 9, Count: 1, Durable: true}
	core := Delivery{Kind: Decision, Agent: "a", Session: "s"}
	relayed := Delivery{Kind: Decision, Agent: "a", Session: "s", Seq: 10, Count: 1, Durable: true, Reply: true}
	leased, unleased := State{Leased: true}, State{}
	taken := Verdict{OK: true, Final: true}
	notPending := Verdict{Final: true, Error: `no call "c1" waits for approval`}
	notHere := Verdict{Error: `no call "c1" waits for approval here yet`}
	tests := []struct {
		name string
		s    State
		d    Delivery
		v    Verdict
		want []string
	}{
		{"decision taken", leased, durable, taken, []string{"reply decision", "ack"}},
		{"decision taken, core", leased, core, taken, []string{"reply decision"}},
		{"decision taken without the lease: left for the next owner", unleased, durable, taken, []string{"reply decision"}},
		{"decision for an approval that is not pending", leased, durable, notPending,
			[]string{"reply decision", `emit: decision rejected: no call "c1" waits for approval`, "ack"}},
		{"relayed request for an approval that is not pending: its kept copy has the event", leased, relayed, notPending,
			[]string{"reply decision", "ack"}},
		{"decision for an approval that is not pending, core", leased, core, notPending,
			[]string{"reply decision", `emit: decision rejected: no call "c1" waits for approval`}},
		{"decision that could not act here comes again", leased, durable, notHere, []string{"nak"}},
		{"decision that could not act here, core: answered", leased, core, notHere,
			[]string{"reply decision", `emit: decision rejected: no call "c1" waits for approval here yet`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Decided(tt.s, tt.d, tt.v)); !slices.Equal(got, tt.want) {
				t.Errorf("Decided(%+v, %+v, %+v) = %q, want %q", tt.s, tt.d, tt.v, got, tt.want)
			}
		})
	}
}

func TestEnded(t *testing.T) {
	in := Delivery{Kind: In, ID: "m1", Seq: 7, Count: 1, Durable: true}
	ask := Delivery{Kind: Ask, ID: "m1", Reply: true}
	relayed := Delivery{Kind: Ask, ID: "m1", Seq: 7, Count: 1, Durable: true, Reply: true}
	tests := []struct {
		name string
		s    State
		d    Delivery
		want []string
	}{
		{"durable in", State{Leased: true}, in, []string{"ack"}},
		{"durable in without the lease: the next owner answers it from the store", State{}, in, []string{}},
		{"core ask", State{Leased: true}, ask, []string{"answer r1"}},
		{"relayed ask", State{Leased: true}, relayed, []string{"answer r1", "ack"}},
		{"relayed ask without the lease", State{}, relayed, []string{"answer r1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Ended(tt.s, tt.d, "r1")); !slices.Equal(got, tt.want) {
				t.Errorf("Ended(%+v, %+v) = %q, want %q", tt.s, tt.d, got, tt.want)
			}
		})
	}
}

func TestSuspended(t *testing.T) {
	durable := Delivery{Kind: In, ID: "m1", Seq: 7, Count: 1, Durable: true}
	ask := Delivery{Kind: Ask, ID: "m1", Reply: true}
	why := errors.New("written by another orchestrator")
	tests := []struct {
		name string
		d    Delivery
		mode Mode
		want []string
	}{
		{"lost lead leaves durable input alone", durable, LeaveAlone, []string{}},
		{"lost lead leaves an ask alone", ask, LeaveAlone, []string{}},
		{"shutdown hands durable input over", durable, HandOver, []string{"nak"}},
		{"shutdown has nothing to hand over of an ask", ask, HandOver, []string{}},
		{"fenced write: durable input comes again later", durable, RetryLater, []string{"retry: written by another orchestrator"}},
		{"fenced write: an ask hears to try again", ask, RetryLater, []string{"retry: written by another orchestrator"}},
		{"deleted session: durable input is refused", durable, Refuse, []string{"reject: written by another orchestrator"}},
		{"deleted session: an ask hears why", ask, Refuse, []string{"reject: written by another orchestrator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(Suspended(tt.d, tt.mode, why)); !slices.Equal(got, tt.want) {
				t.Errorf("Suspended(%+v, %v) = %q, want %q", tt.d, tt.mode, got, tt.want)
			}
		})
	}
}

func TestActionString(t *testing.T) {
	if got := (Action{Op: Op(99)}).String(); !strings.HasPrefix(got, "op(99)") {
		t.Errorf("unknown op renders as %q", got)
	}
}
