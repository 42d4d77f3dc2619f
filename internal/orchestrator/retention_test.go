package orchestrator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/input"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/agentfleet/agentfleet/internal/profile"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storedRecords reads every record the stream holds for a session, with
// an ordered consumer of the raw stream: what is there, retained records
// and all, not what a load makes of it.
func storedRecords(t *testing.T, nc *nats.Conn, agent, session string) []history.Record {
	t.Helper()
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, history.StreamName(subjects), jetstream.OrderedConsumerConfig{FilterSubjects: []string{subjects.History(agent, session)}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Record
	for got := uint64(0); got < info.NumPending; {
		batch, err := cons.Fetch(int(info.NumPending-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			got++
			meta, _ := m.Metadata()
			recs, skipped := history.Decode(meta.Sequence.Stream, m.Headers(), m.Data())
			if len(skipped) > 0 {
				t.Fatalf("stored record does not decode: %v", skipped[0].Err)
			}
			out = append(out, recs...)
		}
		if n == 0 {
			t.Fatalf("%d of %d stored messages arrived", got, info.NumPending)
		}
	}
	return out
}

// checkWholeRuns fails unless records hold whole runs only: each run's
// first record its user message, its last its end, and no run twice.
func checkWholeRuns(t *testing.T, session string, records []history.Record) (questions []string) {
	t.Helper()
	seen := map[string]bool{}
	for i := 0; i < len(records); {
		id := records[i].RunID
		j := i
		for j < len(records) && records[j].RunID == id {
			j++
		}
		run := records[i:j]
		i = j
		if run[0].Retained != nil {
			continue
		}
		u, ok := run[0].Message.(*agentfleet.UserMessage)
		if !ok || run[len(run)-1].Final == nil || seen[id] {
			t.Fatalf("session %s: run %s is not whole: %d records, first %+v", session, id, len(run), run[0])
		}
		seen[id] = true
		questions = append(questions, agentfleet.JoinText(u.Content))
	}
	return questions
}

// userTexts returns the user messages of a model request.
func userTexts(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, m.Text())
		}
	}
	return out
}

// TestRetentionBoundsUnderLoad runs four sessions of an agent bounded to
// 12 history records, twelve runs each, the sessions in parallel, through
// a real model client, NATS and JetStream. After every run the session's
// stored history, read from the stream, is within the bound, holds whole
// runs only, the newest ones, and a load of it (in a store of its own)
// gives the same; every model request sends the newest runs only. After a
// restart each session answers with the context of the runs kept.
// settled is the clock of tests whose cuts come long after their runs'
// inputs were acknowledged: a run younger than four ack waits is never
// dropped (retention.Bounds.Settled), which TestCut covers.
func settled() time.Time { return time.Now().Add(time.Hour) }

func TestRetentionBoundsUnderLoad(t *testing.T) {
	const (
		sessions, runs = 4, 12
		maxRecords     = 12
	)
	profiles, err := orchestrator.ParseProfiles([]byte(fmt.Sprintf("agents:\n  - name: keep\n    history: {max_records: %d}\n", maxRecords)))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	for range sessions * (runs + 1) {
		srv.Enqueue(llmtest.TextReply("ok").Response())
	}
	client, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Now: settled})
	question := func(s, j int) string { return fmt.Sprintf("s%d q%d", s, j) }
	ask := func(nc *nats.Conn, s int, text string) error {
		m, err := nc.Request(fmt.Sprintf("agent.ask.keep.s%d", s), []byte(text), 15*time.Second)
		if err != nil {
			return err
		}
		var a agentfleet.AssistantMessage
		if err := json.Unmarshal(m.Data, &a); err != nil || a.StopReason != agentfleet.StopReasonStop {
			return fmt.Errorf("%s: %s %s %v", text, a.StopReason, a.ErrorMessage, err)
		}
		return nil
	}
	var (
		wg     sync.WaitGroup
		failed = make(chan error, sessions)
		most   atomic.Int64 // records of a session seen at most
	)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := nats.Connect(f.srv.ClientURL())
			if err != nil {
				failed <- err
				return
			}
			defer nc.Close()
			for j := range runs {
				if err := ask(nc, s, question(s, j)); err != nil {
					failed <- err
					return
				}
				recs := storedRecords(t, nc, "keep", fmt.Sprintf("s%d", s))
				if n := int64(len(recs)); n > most.Load() {
					most.Store(n)
				}
				if len(recs) > maxRecords {
					failed <- fmt.Errorf("session s%d after run %d: %d records stored, bound %d", s, j, len(recs), maxRecords)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		t.Fatal(err)
	}
	t.Logf("at most %d records stored in a session", most.Load())

	kept := map[int][]string{}
	for s := range sessions {
		name := fmt.Sprintf("s%d", s)
		recs := storedRecords(t, f.nc, "keep", name)
		qs := checkWholeRuns(t, name, recs)
		if len(qs) == 0 || len(qs) >= runs || qs[len(qs)-1] != question(s, runs-1) {
			t.Fatalf("session %s keeps runs %q, want the newest few", name, qs)
		}
		for i, q := range qs {
			if want := question(s, runs-len(qs)+i); q != want {
				t.Fatalf("session %s keeps %q, not the newest runs in order", name, qs)
			}
		}
		loaded := loadHistory(t, f.nc, "keep", name)
		if loaded.Hidden != 0 || len(loaded.Records) != len(recs) {
			t.Errorf("session %s loads %d records (%d hidden), the stream holds %d", name, len(loaded.Records), loaded.Hidden, len(recs))
		}
		kept[s] = qs
	}
	// Every request sent the newest runs only, ending with its own
	// question: what the loop held in memory was cut as the store was.
	for _, r := range srv.Requests() {
		us := userTexts(r)
		if len(us) == 0 || len(us) > maxRecords/3+1 {
			t.Fatalf("a request sends %d user messages: %q", len(us), us)
		}
		var s, j int
		fmt.Sscanf(us[len(us)-1], "s%d q%d", &s, &j)
		for i, u := range us {
			if want := question(s, j-len(us)+1+i); u != want {
				t.Fatalf("a request sends %q, not the newest runs of session s%d", us, s)
			}
		}
	}

	f.restart(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Now: settled})
	before := len(srv.Requests())
	for s := range sessions {
		if err := ask(f.nc, s, fmt.Sprintf("s%d after", s)); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range srv.Requests()[before:] {
		us := userTexts(r)
		var s int
		fmt.Sscanf(us[len(us)-1], "s%d after", &s)
		want := append(append([]string(nil), kept[s]...), fmt.Sprintf("s%d after", s))
		if strings.Join(us, "|") != strings.Join(want, "|") {
			t.Errorf("after the restart session s%d sends %q, want the runs kept %q", s, us, want)
		}
	}
}

// TestRetentionMaxAge bounds an agent's histories to an hour, with the
// orchestrator's clock injected: runs stay while they are recent; once
// the clock is two hours on, the next run's end drops every run before it
// (the last run is never dropped, however old), and the session answers
// with that run's context.
func TestRetentionMaxAge(t *testing.T) {
	profiles, err := orchestrator.ParseProfiles([]byte("agents:\n  - name: aged\n    history: {max_age: 1h}\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	for range 6 {
		srv.Enqueue(llmtest.TextReply("ok").Response())
	}
	client, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	var ahead atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	f := startFleet(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Now: now})
	for _, q := range []string{"q0", "q1", "q2"} {
		f.ask(t, "aged", "s", q)
	}
	if qs := checkWholeRuns(t, "s", storedRecords(t, f.nc, "aged", "s")); len(qs) != 3 {
		t.Fatalf("recent runs: %q kept, want all three", qs)
	}
	ahead.Store(int64(2 * time.Hour))
	f.ask(t, "aged", "s", "q3")
	recs := storedRecords(t, f.nc, "aged", "s")
	if qs := checkWholeRuns(t, "s", recs); strings.Join(qs, " ") != "q3" {
		t.Fatalf("two hours on: %q kept, want q3 alone", qs)
	}
	if r := recs[len(recs)-1].Retained; r == nil || r.Runs != 3 || r.FirstSeq != recs[0].Seq {
		t.Fatalf("last record %+v, want the retained record of three runs, from %d", recs[len(recs)-1], recs[0].Seq)
	}
	f.ask(t, "aged", "s", "q4")
	reqs := srv.Requests()
	if us := userTexts(reqs[len(reqs)-1]); strings.Join(us, " ") != "q3 q4" {
		t.Errorf("the request after the cut sends %q, want q3 q4", us)
	}
	if qs := checkWholeRuns(t, "s", storedRecords(t, f.nc, "aged", "s")); strings.Join(qs, " ") != "q4" {
		t.Errorf("after q4: %q kept, want q4 alone (q3 is two hours old too)", qs)
	}
}

// TestRetentionKeepsTheSummary bounds a summarize agent's histories to 9
// records: once the model summarized the first two runs, the cut of the
// first run keeps the summary, counted anew from the first message kept,
// so the next request sends the same summary and the same turns as
// before the cut; a later cut past the summary's messages keeps its text
// ahead of the turns kept, and a restart sends what the session sent
// before it.
func TestRetentionKeepsTheSummary(t *testing.T) {
	profiles, err := orchestrator.ParseProfiles([]byte(`
agents:
  - name: sum
    context_window: 2000
    reserve_output: 200
    context_strategy: summarize
    history: {max_records: 9}
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(t)
	for _, text := range []string{"a1", "a2", "SUMMARY-1 of questions 1 and 2", "a3", "a4", "a5", "a6"} {
		srv.Enqueue(llmtest.TextReply(text).Response())
	}
	client, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Now: settled})
	question := func(i int) string { return fmt.Sprintf("question %d %s", i, strings.Repeat("w ", 1000)) }
	for i := 1; i <= 3; i++ {
		f.ask(t, "sum", "s", question(i))
	}
	recs := storedRecords(t, f.nc, "sum", "s")
	ret := recs[len(recs)-1].Retained
	if qs := checkWholeRuns(t, "s", recs); len(qs) != 2 || ret == nil || ret.Summary == nil || ret.Summary.Covers != 2 || !strings.HasPrefix(ret.Summary.Text, "SUMMARY-1") {
		t.Fatalf("after the summary: %d runs kept, retained %+v; want the first run dropped, the summary covering 2", len(qs), ret)
	}
	sends := func(i int, want, not []string) {
		t.Helper()
		reqs := srv.Requests()
		body := string(reqs[i].Body)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("request %d lacks %q", i, w)
			}
		}
		for _, n := range not {
			if strings.Contains(body, n) {
				t.Errorf("request %d sends %q", i, n)
			}
		}
	}
	f.ask(t, "sum", "s", "short one")
	sends(4, []string{"SUMMARY-1", "question 3", "short one"}, []string{"question 1", "question 2"})
	f.ask(t, "sum", "s", "another")
	sends(5, []string{"SUMMARY-1", "question 3", "short one", "another"}, []string{"question 2"})
	kept := checkWholeRuns(t, "s", storedRecords(t, f.nc, "sum", "s"))

	f.restart(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Now: settled})
	f.ask(t, "sum", "s", "after")
	after := userTexts(srv.Requests()[6])
	// The request after the restart sends the summary and the runs kept
	// before it.
	if !strings.HasPrefix(after[0], "Summary of the earlier conversation:\nSUMMARY-1") || after[len(after)-1] != "after" {
		t.Fatalf("after the restart: %q", after)
	}
	if got, want := strings.Join(after[1:], "|"), strings.Join(append(kept, "after"), "|"); got != want {
		t.Errorf("after the restart the request sends %q, want the runs kept %q", got, want)
	}
	if n := srv.Pending(); n != 0 {
		t.Errorf("%d replies left: a summary more or less was asked", n)
	}
}

// TestStreamLimitsReachTheStreams starts an orchestrator with stream-wide
// limits, as the flags --input-max-age, --input-max-bytes,
// --history-max-age and --history-max-bytes give them: the server's info
// of AGENT_INPUT and AGENT_HISTORY says them.
func TestStreamLimitsReachTheStreams(t *testing.T) {
	f := startFleet(t, orchestrator.Config{Model: newScript(), Durable: true, DurableConfig: input.DurableConfig{
		InputMaxAge: 36 * time.Hour, InputMaxBytes: 64 << 20, HistoryMaxAge: 90 * 24 * time.Hour, HistoryMaxBytes: 10 << 30,
	}})
	js, _ := jetstream.New(f.nc)
	for _, c := range []struct {
		stream string
		age    time.Duration
		bytes  int64
	}{{"AGENT_INPUT", 36 * time.Hour, 64 << 20}, {"AGENT_HISTORY", 90 * 24 * time.Hour, 10 << 30}} {
		s, err := js.Stream(context.Background(), c.stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.MaxAge != c.age || info.Config.MaxBytes != c.bytes {
			t.Errorf("%s: max age %s, max bytes %d; want %s, %d", c.stream, info.Config.MaxAge, info.Config.MaxBytes, c.age, c.bytes)
		}
	}
}

// TestRetentionKeepsTheHandoff bounds support's sessions to 6 records:
// the run that handed the session over to billing is dropped by the cut
// after billing's first answer, and the retained record carries the
// handoff, so that after a restart billing still serves the session.
func TestRetentionKeepsTheHandoff(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(
		llmtest.ToolCallsReply(llmtest.ToolCall{ID: "call_tr", Name: "transfer_to_billing", Arguments: `{"reason":"a refund"}`}).Response(),
		llmtest.TextReply("billing: refund started").Response(),
		llmtest.TextReply("billing: after the restart").Response(),
	)
	profiles := desk()
	profiles[0].History = &profile.History{MaxRecords: 6}
	workers := toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("lookup"), echo("refund")}}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: profiles, Now: settled}, workers)
	f.ask(t, "support", "s1", "I want my money back")
	if got := agentfleet.JoinText(f.ask(t, "support", "s1", "order 7").Content); got != "billing: refund started" {
		t.Fatalf("second answer %q", got)
	}
	recs := storedRecords(t, f.nc, "support", "s1")
	ret := recs[len(recs)-1].Retained
	if ret == nil || ret.Handoff == nil || ret.Handoff.To != "billing" {
		t.Fatalf("last record %+v, want a retained record carrying the handoff", recs[len(recs)-1])
	}
	for _, r := range recs {
		if r.Handoff != nil {
			t.Fatalf("the handoff's run is still stored: %+v", recs)
		}
	}

	f.restart(t, orchestrator.Config{Model: client, Durable: true, Profiles: profiles, Now: settled})
	if got := agentfleet.JoinText(f.ask(t, "support", "s1", "and order 8").Content); got != "billing: after the restart" {
		t.Errorf("after the restart: %q", got)
	}
	if m, p, _, users := served(lastRequest(t, model, 3)); m != "billing-model" || p != "You are billing." || strings.Join(users, "|") != "order 7|and order 8" {
		t.Errorf("after the restart: model %s, prompt %q, users %q; want billing's, over the runs kept", m, p, users)
	}
}

// TestRetentionKeepsTheForkModel bounds a fork onto another model to 6
// records: once the cuts have dropped its forked record, the retained
// record carries it, and after a restart the fork's runs still ask for
// the fork's model.
func TestRetentionKeepsTheForkModel(t *testing.T) {
	model, client := newModelClient(t)
	model.Enqueue(llmtest.TextReply("one").Response(), llmtest.TextReply("two").Response(), llmtest.TextReply("three").Response(), llmtest.TextReply("four").Response())
	profiles := []orchestrator.Profile{{Name: "default", Model: "m-a", ForkModels: []string{"m-b"}, History: &profile.History{MaxRecords: 6}}}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true, Profiles: profiles, Now: settled})
	f.ask(t, "default", "s1", "hello")
	subjects, _ := bus.NewSubjects("")
	m, err := f.nc.Request(timetravel.Subject(subjects, "default", "s1"), []byte(`{"new_session":"s2","model":"m-b"}`), 10*time.Second)
	if err != nil || !strings.Contains(string(m.Data), `"model":"m-b"`) {
		t.Fatalf("fork: %v %s", err, m.Data)
	}
	f.ask(t, "default", "s2", "again")
	f.ask(t, "default", "s2", "third")
	carried := false
	for _, r := range storedRecords(t, f.nc, "default", "s2") {
		if r.Forked != nil {
			t.Fatalf("the forked record is still stored: %+v", r)
		}
		carried = carried || (r.Retained != nil && r.Retained.Forked != nil && r.Retained.Forked.Model == "m-b")
	}
	if !carried {
		t.Fatal("no retained record carries the forked record")
	}

	f.restart(t, orchestrator.Config{Model: client, Durable: true, Profiles: profiles, Now: settled})
	f.ask(t, "default", "s2", "fourth")
	if m, _, _, users := served(lastRequest(t, model, 4)); m != "m-b" || strings.Join(users, "|") != "third|fourth" {
		t.Errorf("after the restart the fork asks model %q with %q, want m-b with the run kept", m, users)
	}
}
