package services_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/services"
)

// stored is a session's history of two runs: run r1 stored as one
// envelope (seq 1, three records) and its end (seq 2), run r2 as plain
// records (seq 3, 4), a record that did not decode (seq 5), and r2's end
// (seq 6).
func stored() *history.Loaded {
	user := func(text string) agentfleet.Message { return agentfleet.NewUserMessage(text) }
	asst := &agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("hello")}}
	return &history.Loaded{
		Records: []history.Record{
			{Seq: 1, Index: 0, RunID: "r1", Writer: "o1", Message: user("hi")},
			{Seq: 1, Index: 1, RunID: "r1", Writer: "o1", Message: asst},
			{Seq: 1, Index: 2, RunID: "r1", Writer: "o1", Summary: &agentfleet.ContextSummary{}},
			{Seq: 2, RunID: "r1", Writer: "o1", Final: asst},
			{Seq: 3, RunID: "r2", Writer: "o2", Message: user(strings.Repeat("x", 3000))},
			{Seq: 4, RunID: "r2", Writer: "o2", Message: asst},
			{Seq: 6, RunID: "r2", Writer: "o2", Final: asst},
		},
		Skipped: []history.Skipped{{Seq: 5, Index: 0, Err: errors.New("record 5: bad kind")}},
		LastSeq: 6,
	}
}

// where lists a page's records as seq.index:kind, and its next page.
func where(r *client.HistoryReplyJSON) string {
	var b strings.Builder
	for _, rec := range r.Records {
		fmt.Fprintf(&b, "%d.%d:%s", rec.Seq, rec.Index, rec.Kind)
		if rec.Omitted {
			b.WriteString("(omitted)")
		}
		b.WriteString(" ")
	}
	fmt.Fprintf(&b, "next=%d skipped=%d", r.Next, len(r.Skipped))
	return b.String()
}

func TestHistoryPage(t *testing.T) {
	const roomy = 1 << 20
	for _, tc := range []struct {
		name     string
		req      client.HistoryRequestJSON
		maxBytes int
		want     string
	}{
		{"whole", client.HistoryRequestJSON{Limit: 100}, roomy,
			"1.0:user 1.1:assistant 1.2:summary 2.0:end 3.0:user 4.0:assistant 6.0:end next=0 skipped=1"},
		{"an envelope is never split", client.HistoryRequestJSON{Limit: 2}, roomy,
			"1.0:user 1.1:assistant 1.2:summary next=2 skipped=0"},
		{"the next page", client.HistoryRequestJSON{FromSeq: 2, Limit: 2}, roomy,
			"2.0:end 3.0:user next=4 skipped=0"},
		{"the last page, with the skipped record", client.HistoryRequestJSON{FromSeq: 4, Limit: 2}, roomy,
			"4.0:assistant 6.0:end next=0 skipped=1"},
		{"past the end", client.HistoryRequestJSON{FromSeq: 7, Limit: 2}, roomy,
			"next=0 skipped=0"},
		{"bytes end a page", client.HistoryRequestJSON{FromSeq: 3, Limit: 100}, 3700,
			"3.0:user next=4 skipped=0"},
		{"a body too large for any page", client.HistoryRequestJSON{FromSeq: 3, Limit: 1}, 3000,
			"3.0:user(omitted) next=4 skipped=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := services.HistoryPage(stored(), tc.req, tc.maxBytes)
			if got := where(r); got != tc.want {
				t.Errorf("page = %s\nwant   %s", got, tc.want)
			}
			if r.LastSeq != 6 {
				t.Errorf("last_seq = %d, want 6", r.LastSeq)
			}
		})
	}
}

func TestParseHistoryRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       client.HistoryRequestJSON
		err        string
	}{
		{"empty", "", client.HistoryRequestJSON{Limit: services.DefaultHistoryLimit}, ""},
		{"a page", `{"from_seq":5,"limit":10}`, client.HistoryRequestJSON{FromSeq: 5, Limit: 10}, ""},
		{"not JSON", `{`, client.HistoryRequestJSON{}, "not a history request"},
		{"unknown field", `{"from":5}`, client.HistoryRequestJSON{}, `unknown field "from"`},
		{"trailing data", `{} {}`, client.HistoryRequestJSON{}, "data after the JSON value"},
		{"negative limit", `{"limit":-1}`, client.HistoryRequestJSON{}, "limit -1: want 1 to 1000"},
		{"limit too large", `{"limit":5000}`, client.HistoryRequestJSON{}, "limit 5000: want 1 to 1000"},
		{"negative sequence", `{"from_seq":-1}`, client.HistoryRequestJSON{}, "cannot unmarshal"},
		{"too long", `{"limit":1` + strings.Repeat(" ", 2000) + `}`, client.HistoryRequestJSON{}, "bytes, at most 1024"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := services.ParseHistoryRequest([]byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestHistoryReply asks over NATS, as agentctl history does, and sends it
// what a hostile client might.
func TestHistoryReply(t *testing.T) {
	nc, subjects := start(t, &agents{})
	for _, tc := range []struct {
		name, agent, session, body, want, err string
	}{
		{"a page", "a", "s1", `{"limit":3}`, "1.0:user 1.1:assistant 1.2:summary next=2 skipped=0", ""},
		{"unknown agent", "b", "s1", "", "next=0 skipped=0", "unknown agent b"},
		{"bad request", "a", "s1", `{"limit":"all"}`, "next=0 skipped=0", "history request on agent.ask.a.s1.history: the request is not a history request"},
		{"session too long", "a", strings.Repeat("s", 129), "", "next=0 skipped=0", "session name is 129 bytes long, the limit is 128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request[client.HistoryReplyJSON](t, nc, subjects.SessionHistory(tc.agent, tc.session), []byte(tc.body))
			if got := where(r); got != tc.want {
				t.Errorf("page = %s, want %s", got, tc.want)
			}
			if got := r.Error; (tc.err == "") != (got == "") || !strings.Contains(got, tc.err) {
				t.Errorf("error = %q, want one with %q", got, tc.err)
			}
		})
	}
}
