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
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
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
	f := startFleet(t, orchestrator.Config{Model: client, Profiles: profiles, Durable: true})
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

	stopped, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.orch.Close(stopped); err != nil {
		t.Fatal(err)
	}
	o2, err := orchestrator.New(bustest.MustConnect(t, f.srv), orchestrator.Config{Model: client, Profiles: profiles, Durable: true, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o2.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o2.Close(context.Background())
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
