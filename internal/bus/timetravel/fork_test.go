package timetravel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func open(t *testing.T) (*history.Store, *nats.Conn) {
	t.Helper()
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subjects, _ := bus.NewSubjects("")
	st, err := history.Open(context.Background(), js, subjects, "o1", history.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return st, nc
}

// seed stores session src: run r1 (user, an envelope of assistant + tool
// result, run end), a summary record, run r2 (user, run end). It returns
// the stream sequences of the stored messages, in order.
func seed(t *testing.T, st *history.Store, src string) []uint64 {
	t.Helper()
	ctx := context.Background()
	w := st.Writer("default", src, 0, ownership.Unfenced, ownership.Fence{})
	var seqs []uint64
	add := func(seq uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	add(w.Append(ctx, "r1", agentfleet.NewUserMessage("first question")))
	if err := w.Buffer(ctx, history.Record{RunID: "r1", Message: &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{{Type: agentfleet.ContentToolCall, ID: "c1", Name: "echo", Arguments: json.RawMessage(`{}`)}}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Buffer(ctx, history.Record{RunID: "r1", Message: &agentfleet.ToolResultMessage{Role: agentfleet.RoleTool, ToolCallID: "c1", Content: []agentfleet.Content{agentfleet.Text("echoed")}}}); err != nil {
		t.Fatal(err)
	}
	add(w.Flush(ctx))
	add(w.AppendRunEnd(ctx, "r1", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("first answer")}}))
	add(w.AppendSummary(ctx, "r2", &agentfleet.ContextSummary{Text: "they asked a first question", Covers: 3}))
	add(w.Append(ctx, "r2", agentfleet.NewUserMessage("second question")))
	add(w.AppendRunEnd(ctx, "r2", &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("second answer")}}))
	return seqs
}

// TestFork forks a session mid-run, between runs, at a summary record and
// before a run: the fork holds the source's records up to the point, in
// order and with their run ids, then one forked record naming the source
// and point; the source is untouched, and a second fork into the same
// session is refused.
func TestFork(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	seqs := seed(t, st, "src")
	before, err := st.Load(ctx, "default", "src")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dst string
		p         timetravel.Point
		want      int // records copied
	}{
		{"mid-run", "mid", timetravel.Point{AtSeq: seqs[1]}, 3},
		{"between runs", "between", timetravel.Point{AtSeq: seqs[2]}, 4},
		{"at summary", "summary", timetravel.Point{AtSeq: seqs[3]}, 5},
		{"before run (the summary was written in it)", "before", timetravel.Point{BeforeRun: "r2"}, 4},
		{"whole", "whole", timetravel.Point{}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := timetravel.Fork(ctx, st, "default", "src", timetravel.Request{NewSession: tc.dst, Point: tc.p})
			if err != nil {
				t.Fatal(err)
			}
			if f.Records != tc.want || f.Source != "src" {
				t.Fatalf("forked %+v, want %d records of src", f, tc.want)
			}
			got, err := st.Load(ctx, "default", tc.dst)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Records) != tc.want+1 || len(got.Skipped) != 0 {
				t.Fatalf("fork holds %d records (%d skipped), want %d + forked", len(got.Records), len(got.Skipped), tc.want)
			}
			for i, r := range got.Records[:tc.want] {
				src := before.Records[i]
				if r.RunID != src.RunID || (r.Message == nil) != (src.Message == nil) || (r.Summary == nil) != (src.Summary == nil) || (r.Final == nil) != (src.Final == nil) {
					t.Fatalf("record %d of the fork is %+v, the source's %+v", i, r, src)
				}
				if r.Writer != "o1" {
					t.Fatalf("record %d written by %q", i, r.Writer)
				}
			}
			last := got.Records[tc.want]
			if last.Forked == nil || last.Forked.Source != "src" || last.Forked.Records != tc.want || last.Forked.BeforeRun != tc.p.BeforeRun {
				t.Fatalf("last record %+v, want the forked record", last)
			}
			if got.LastSeq != f.LastSeq {
				t.Fatalf("fork says last %d, the store %d", f.LastSeq, got.LastSeq)
			}
			// The fork takes appends like any session: a writer that
			// expects its last record.
			w := st.Writer("default", tc.dst, got.LastSeq, ownership.Unfenced, ownership.Fence{})
			if _, err := w.Append(ctx, "r3", agentfleet.NewUserMessage("after the fork")); err != nil {
				t.Fatal(err)
			}
			if _, err := timetravel.Fork(ctx, st, "default", "src", timetravel.Request{NewSession: tc.dst, Point: tc.p}); !errors.Is(err, timetravel.ErrExists) {
				t.Fatalf("second fork into %s: %v, want ErrExists", tc.dst, err)
			}
		})
	}
	after, err := st.Load(ctx, "default", "src")
	if err != nil {
		t.Fatal(err)
	}
	if after.LastSeq != before.LastSeq || len(after.Records) != len(before.Records) {
		t.Fatalf("source changed: %d records to %d, last %d to %d", len(before.Records), len(after.Records), before.LastSeq, after.LastSeq)
	}
	for _, tc := range []struct {
		name, src, dst string
		p              timetravel.Point
		err            string
	}{
		{"unknown run", "src", "x1", timetravel.Point{BeforeRun: "nope"}, `no run "nope"`},
		{"gap", "src", "x2", timetravel.Point{AtSeq: 999}, "no stored message 999"},
		{"empty source", "nothing", "x3", timetravel.Point{}, "holds no records"},
		{"into itself", "src", "src", timetravel.Point{}, "into itself"},
		{"bad name", "src", "a.b", timetravel.Point{}, "may hold only"},
	} {
		if _, err := timetravel.Fork(ctx, st, "default", tc.src, timetravel.Request{NewSession: tc.dst, Point: tc.p}); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
		}
	}
}

// TestServe forks over the public subject and refuses bad requests with an
// error that says what is wrong; a request whose reply subject is outside
// inbox space gets no answer and forks nothing.
func TestServe(t *testing.T) {
	st, nc := open(t)
	ctx := context.Background()
	seed(t, st, "src")
	subjects, _ := bus.NewSubjects("")
	srv, err := timetravel.Serve(ctx, nc, timetravel.Config{Subjects: subjects, Store: st, Agent: func(a string) error {
		if a != "default" {
			return errors.New("unknown agent " + a)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ask := func(subject string, data []byte) timetravel.Reply {
		t.Helper()
		m, err := nc.Request(subject, data, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep timetravel.Reply
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		return rep
	}
	rep := ask(timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"f1","before_run":"r2"}`))
	if rep.Error != "" || rep.Forked == nil || rep.Forked.Records != 4 {
		t.Fatalf("fork reply %+v", rep)
	}
	for _, tc := range []struct {
		name, subject string
		data          []byte
		err           string
	}{
		{"exists", timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"f1"}`), "exists"},
		{"bad json", timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":`), "not JSON"},
		{"unknown field", timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"f2","bogus":1}`), "unknown field"},
		{"no new session", timetravel.Subject(subjects, "default", "src"), []byte(`{}`), "new session name is empty"},
		{"bad new session", timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"a*b"}`), "may hold only"},
		{"oversized", timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"f3","before_run":"` + strings.Repeat("x", 5000) + `"}`), "limit is 4096"},
		{"unknown agent", timetravel.Subject(subjects, "other", "src"), []byte(`{"new_session":"f4"}`), "unknown agent other"},
		{"negative seq", timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"f5","at":-1}`), "not JSON"},
	} {
		if rep := ask(tc.subject, tc.data); rep.Forked != nil || !strings.Contains(rep.Error, tc.err) {
			t.Errorf("%s: reply %+v, want an error with %q", tc.name, rep, tc.err)
		}
	}
	// A reply subject outside inbox space: no answer, no fork.
	spy, err := nc.SubscribeSync("agent.out.default.src")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(timetravel.Subject(subjects, "default", "src"), "agent.out.default.src", []byte(`{"new_session":"f6"}`)); err != nil {
		t.Fatal(err)
	}
	// Then a fork that is answered: the server handled the first before it.
	if rep := ask(timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"f7"}`)); rep.Error != "" {
		t.Fatal(rep.Error)
	}
	if m, err := spy.NextMsg(200 * time.Millisecond); err == nil {
		t.Fatalf("answered on %s: %q", m.Subject, m.Data)
	}
	if l, err := st.Load(ctx, "default", "f6"); err != nil || l.LastSeq != 0 {
		t.Fatalf("the refused request forked f6: %+v, %v", l, err)
	}
}

// TestServeBounded holds the one fork slot of a server and sends another
// request: it is answered at once with a busy error, and the held fork
// completes once let go.
func TestServeBounded(t *testing.T) {
	st, nc := open(t)
	seed(t, st, "src")
	subjects, _ := bus.NewSubjects("")
	entered, release := make(chan struct{}, 1), make(chan struct{})
	srv, err := timetravel.Serve(context.Background(), nc, timetravel.Config{Subjects: subjects, Store: st, MaxInFlight: 1, Agent: func(string) error {
		entered <- struct{}{}
		<-release
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	held, err := nc.SubscribeSync(nc.NewRespInbox())
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(timetravel.Subject(subjects, "default", "src"), held.Subject, []byte(`{"new_session":"h1"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the first fork did not start")
	}
	m, err := nc.Request(timetravel.Subject(subjects, "default", "src"), []byte(`{"new_session":"h2"}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Data), "busy: 1 forks in flight") {
		t.Fatalf("second fork: %s, want busy", m.Data)
	}
	close(release)
	m, err = held.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep timetravel.Reply
	if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Forked == nil {
		t.Fatalf("held fork: %s, %v", m.Data, err)
	}
}
