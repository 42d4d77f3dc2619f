package erase_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fleet is the fleet's streams and object store on a real JetStream.
type fleet struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	subjects bus.Subjects
	history  *history.Store
	objects  *objref.Store
}

func openFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := context.Background()
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	st, err := history.Open(ctx, js, subjects, "o1", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := input.OpenDurable(ctx, nc, subjects, input.DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	in := input.NewInput(nc, subjects, nil, events.NewPublisher(nc, subjects, nil), nil)
	if _, err := d.Input(ctx, in); err != nil {
		t.Fatal(err)
	}
	obs, err := objref.Open(ctx, js, objref.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &fleet{nc: nc, js: js, subjects: subjects, history: st, objects: obs}
}

// seed stores something of session in every place: two history records,
// a message and a steer in the input, a decision, three events, two
// objects.
func (f *fleet) seed(t *testing.T, session string) {
	t.Helper()
	ctx := context.Background()
	w := f.history.Writer("default", session, 0, ownership.Unfenced, ownership.Fence{})
	if _, err := w.Append(ctx, "r1", agentfleet.NewUserMessage("my address is 1 Main St")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AppendRunEnd(ctx, "r1", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("noted")}}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{bus.KindIn, bus.KindSteer} {
		if _, err := f.js.Publish(ctx, f.subjects.Client(kind, "default", session), []byte(`{"content":"x"}`)); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
	}
	// The approve stream acknowledges nothing (no_ack).
	for range 2 {
		if err := f.nc.Publish(f.subjects.Approve("default", session), []byte(`{"decision":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	bustest.Eventually(t, "the decisions taken into the input stream", func() bool {
		m, _ := f.held(t, session)
		return m["AGENT_INPUT"] == 4
	})
	for _, kind := range []string{"run.start", "tool.start", "run.end"} {
		if _, err := f.js.Publish(ctx, f.subjects.Event("default", session, kind), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := f.objects.Put(ctx, objref.Meta{Agent: "default", Session: session}, strings.NewReader("payload of "+session), 1<<20, "test"); err != nil {
			t.Fatal(err)
		}
	}
}

// held returns what the store holds of session: messages per stream and
// objects.
func (f *fleet) held(t *testing.T, session string) (map[string]uint64, int) {
	t.Helper()
	ctx := context.Background()
	out := map[string]uint64{}
	for _, tg := range erase.Targets(f.subjects, "default", session) {
		str, err := f.js.Stream(ctx, tg.Stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := str.Info(ctx, jetstream.WithSubjectFilter(tg.Filter))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range info.State.Subjects {
			out[tg.Stream] += n
		}
	}
	n := 0
	list, err := f.objects.SessionBytes(ctx, "default", session)
	if err != nil {
		t.Fatal(err)
	}
	if list > 0 {
		n = 1
	}
	return out, n
}

func total(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

func request(t *testing.T, nc *nats.Conn, subject, data string) erase.Reply {
	t.Helper()
	m, err := nc.Request(subject, []byte(data), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep erase.Reply
	if err := json.Unmarshal(m.Data, &rep); err != nil {
		t.Fatalf("reply %q: %v", m.Data, err)
	}
	return rep
}

// TestServe deletes a session over the public subject: every stream's
// messages of it and its objects are gone, another session keeps all of
// its own, the answer counts what went and names the orchestrator that
// held it; a second delete, and the delete of a session that never
// existed, answer zero counts. Bad requests are refused with an error that
// says what is wrong and delete nothing; a request whose reply subject is
// outside inbox space gets no answer and deletes nothing.
func TestServe(t *testing.T) {
	f := openFleet(t)
	f.seed(t, "s1")
	f.seed(t, "s2")
	f.seed(t, "s3")
	var mu sync.Mutex
	var stops []string
	srv, err := erase.Serve(context.Background(), f.nc, erase.Config{
		Subjects: f.subjects, Self: "o1",
		Deleter: &erase.Deleter{Subjects: f.subjects, NC: f.nc, JS: f.js, Objects: f.objects,
			Members: func() []string { return []string{"o1"} }},
		Agent: func(a string) error {
			if a != "default" {
				return errors.New("unknown agent " + a)
			}
			return nil
		},
		Stop: func(_ context.Context, agent, session string) (bool, []string, error) {
			mu.Lock()
			defer mu.Unlock()
			stops = append(stops, agent+"."+session)
			if session == "s1" {
				return true, []string{"r1"}, nil
			}
			return false, nil, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before, _ := f.held(t, "s2")
	rep := request(t, f.nc, erase.Subject(f.subjects, "default", "s1"), `{"confirm":"s1"}`)
	if rep.Error != "" || rep.Deleted == nil {
		t.Fatalf("delete reply %+v", rep)
	}
	d := rep.Deleted
	want := map[string]uint64{"AGENT_HISTORY": 2, "AGENT_APPROVE": 2, "AGENT_INPUT": 4, "AGENT_EVENTS": 3}
	for stream, n := range want {
		if d.Messages[stream] != n {
			t.Errorf("deleted %d messages of %s, want %d (%+v)", d.Messages[stream], stream, n, d.Messages)
		}
	}
	if d.Objects != 2 || !slices.Equal(d.Stopped, []string{"o1"}) || len(d.Unanswered) != 0 {
		t.Errorf("deleted %+v, want 2 objects, stopped by o1", d)
	}
	if m, objs := f.held(t, "s1"); total(m) != 0 || objs != 0 {
		t.Fatalf("s1 still holds %+v and %d objects", m, objs)
	}
	// The run its owner stopped is marked, for the worker that may still
	// store a file of it.
	if kv, err := f.js.KeyValue(context.Background(), objref.ErasedBucket); err != nil {
		t.Fatal(err)
	} else if _, err := kv.Get(context.Background(), "default.s1.r1"); err != nil {
		t.Fatalf("the stopped run r1 of s1 is not marked: %v", err)
	}
	if after, objs := f.held(t, "s2"); !maps(after, before) || objs == 0 {
		t.Fatalf("s2 holds %+v and %d objects after the delete of s1, %+v before", after, objs, before)
	}
	for _, s := range []string{"s1", "never"} {
		rep := request(t, f.nc, erase.Subject(f.subjects, "default", s), `{"confirm":"`+s+`"}`)
		if rep.Error != "" || rep.Deleted == nil || total(rep.Deleted.Messages) != 0 || rep.Deleted.Objects != 0 {
			t.Fatalf("delete of %s, which holds nothing: %+v", s, rep)
		}
	}

	for _, tc := range []struct {
		name, subject, data, err string
	}{
		{"bad json", erase.Subject(f.subjects, "default", "s2"), `{"confirm":`, "not JSON"},
		{"unknown field", erase.Subject(f.subjects, "default", "s2"), `{"confirm":"s2","everything":true}`, "unknown field"},
		{"no confirm", erase.Subject(f.subjects, "default", "s2"), `{}`, "confirm is"},
		{"wrong confirm", erase.Subject(f.subjects, "default", "s2"), `{"confirm":"s3"}`, "confirm is"},
		{"oversized", erase.Subject(f.subjects, "default", "s2"), `{"confirm":"` + strings.Repeat("x", 4096) + `"}`, "limit is 1024"},
		{"unknown agent", erase.Subject(f.subjects, "other", "s2"), `{"confirm":"s2"}`, "unknown agent other"},
		{"long session name", erase.Subject(f.subjects, "default", strings.Repeat("s", 200)), `{"confirm":"x"}`, "limit is 128"},
	} {
		if rep := request(t, f.nc, tc.subject, tc.data); rep.Deleted != nil || !strings.Contains(rep.Error, tc.err) {
			t.Errorf("%s: reply %+v, want an error with %q", tc.name, rep, tc.err)
		}
	}
	// A reply subject outside inbox space: no answer, nothing deleted.
	spy, err := f.nc.SubscribeSync("agent.out.default.s2")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nc.PublishRequest(erase.Subject(f.subjects, "default", "s2"), "agent.out.default.s2", []byte(`{"confirm":"s2"}`)); err != nil {
		t.Fatal(err)
	}
	// No reply subject at all: nothing either.
	if err := f.nc.Publish(erase.Subject(f.subjects, "default", "s2"), []byte(`{"confirm":"s2"}`)); err != nil {
		t.Fatal(err)
	}
	// Then a delete that is answered: the server handled the others before.
	if rep := request(t, f.nc, erase.Subject(f.subjects, "default", "s3"), `{"confirm":"s3"}`); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if m, err := spy.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("answered on %s: %q", m.Subject, m.Data)
	}
	if after, objs := f.held(t, "s2"); !maps(after, before) || objs == 0 {
		t.Fatalf("refused requests deleted from s2: %+v, %d objects; before %+v", after, objs, before)
	}
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(stops, "default.s2") {
		t.Fatalf("a refused request stopped s2: %q", stops)
	}
}

func maps(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestStopUnanswered has a member that never answers the stop and one
// that fails it: the first costs the stop's wait and is named unanswered,
// the session is deleted anyway (the store fences it); the second fails
// the delete before anything is purged.
func TestStopUnanswered(t *testing.T) {
	f := openFleet(t)
	f.seed(t, "s1")
	d := &erase.Deleter{Subjects: f.subjects, NC: f.nc, JS: f.js, Objects: f.objects,
		Members: func() []string { return []string{"o1", "ghost"} }, StopWait: 300 * time.Millisecond}
	srv, err := erase.Serve(context.Background(), f.nc, erase.Config{Subjects: f.subjects, Self: "o1", Deleter: d,
		Stop: func(_ context.Context, _, session string) (bool, []string, error) {
			if session == "stuck" {
				return true, nil, errors.New("its run did not stop")
			}
			return false, nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	started := time.Now()
	got, err := d.Delete(context.Background(), "default", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Unanswered, []string{"ghost"}) || len(got.Stopped) != 0 || got.Messages["AGENT_HISTORY"] != 2 {
		t.Fatalf("deleted %+v, want ghost unanswered and the history gone", got)
	}
	if waited := time.Since(started); waited < 300*time.Millisecond {
		t.Fatalf("the delete waited %v for the ghost, want the stop's wait", waited)
	}
	f.seed(t, "stuck")
	if _, err := d.Delete(context.Background(), "default", "stuck"); err == nil || !strings.Contains(err.Error(), "orchestrator o1 could not stop session stuck: its run did not stop") {
		t.Fatalf("delete of a session whose owner cannot stop it: %v", err)
	}
	if m, objs := f.held(t, "stuck"); m["AGENT_HISTORY"] != 2 || objs == 0 {
		t.Fatalf("the failed delete purged %+v, %d objects", m, objs)
	}
}

// TestServeBounded holds the one delete slot of a server and sends another
// request: it is answered at once with a busy error, and the held delete
// completes once let go.
func TestServeBounded(t *testing.T) {
	f := openFleet(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	srv, err := erase.Serve(context.Background(), f.nc, erase.Config{Subjects: f.subjects, MaxInFlight: 1,
		Deleter: &erase.Deleter{Subjects: f.subjects, JS: f.js},
		Agent: func(string) error {
			entered <- struct{}{}
			<-release
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	held, err := f.nc.SubscribeSync(f.nc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nc.PublishRequest(erase.Subject(f.subjects, "default", "h1"), held.Subject, []byte(`{"confirm":"h1"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first delete did not start")
	}
	if rep := request(t, f.nc, erase.Subject(f.subjects, "default", "h2"), `{"confirm":"h2"}`); !strings.Contains(rep.Error, "busy: 1 deletes in flight") {
		t.Fatalf("second delete: %+v, want busy", rep)
	}
	close(release)
	m, err := held.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep erase.Reply
	if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Deleted == nil {
		t.Fatalf("held delete: %s, %v", m.Data, err)
	}
}

// TestStopHostile sends stops as a rogue or broken orchestrator would: a
// reply subject outside inbox space, or none, gets no answer and stops
// nothing; bad names are answered with what is wrong and stop nothing;
// whatever the body holds, a good stop is answered.
func TestStopHostile(t *testing.T) {
	f := openFleet(t)
	var mu sync.Mutex
	var stops []string
	srv, err := erase.Serve(context.Background(), f.nc, erase.Config{Subjects: f.subjects, Self: "o1",
		Deleter: &erase.Deleter{Subjects: f.subjects, JS: f.js},
		Stop: func(_ context.Context, agent, session string) (bool, []string, error) {
			mu.Lock()
			defer mu.Unlock()
			stops = append(stops, agent+"."+session)
			return false, nil, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	spy, _ := f.nc.SubscribeSync("agent.out.default.s1")
	if err := f.nc.PublishRequest(erase.StopSubject(f.subjects, "default", "s1"), "agent.out.default.s1", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.nc.Publish(erase.StopSubject(f.subjects, "default", "s1"), nil); err != nil {
		t.Fatal(err)
	}
	stop := func(subject, body string) erase.StopReply {
		t.Helper()
		m, err := f.nc.Request(subject, []byte(body), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep erase.StopReply
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatalf("stop reply %q: %v", m.Data, err)
		}
		return rep
	}
	if rep := stop("agent.erase.default."+strings.Repeat("s", 200), "{}"); rep.Orchestrator != "o1" || !strings.Contains(rep.Error, "limit is 128") {
		t.Errorf("stop of a long name: %+v", rep)
	}
	if rep := stop(erase.StopSubject(f.subjects, "default", "s2"), "{not json"+strings.Repeat("x", 10000)); rep.Orchestrator != "o1" || !strings.Contains(rep.Error, "the limit is 256") {
		t.Errorf("stop with a garbage body: %+v, want refused for its size", rep)
	}
	if rep := stop(erase.StopSubject(f.subjects, "default", "s2"), `{"input_seq":"x"}`); !strings.Contains(rep.Error, "not JSON of {input_seq}") {
		t.Errorf("stop with a bad input_seq: %+v, want refused", rep)
	}
	if rep := stop(erase.StopSubject(f.subjects, "default", "s2"), `{"input_seq":5}`); rep.Orchestrator != "o1" || rep.Error != "" {
		t.Errorf("stop of s2: %+v", rep)
	}
	if m, err := spy.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("answered on %s: %q", m.Subject, m.Data)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stops) != 1 || stops[0] != "default.s2" {
		t.Fatalf("stopped %q, want default.s2 alone", stops)
	}
}
