package history

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
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestNextRequest checks the hand-written direct get request against the
// JSON it stands for, for plain subjects and for one that needs escaping.
func TestNextRequest(t *testing.T) {
	for _, subject := range []string{"agent.history.default.s-1", `agent.history.a"b.\c`, "agent.history.é.\x01"} {
		var got struct {
			Seq  uint64 `json:"seq"`
			Next string `json:"next_by_subj"`
		}
		req := nextRequest(18446744073709551615, subject)
		if err := json.Unmarshal(req, &got); err != nil {
			t.Fatalf("%q: %s: %v", subject, req, err)
		}
		if got.Seq != 18446744073709551615 || got.Next != subject {
			t.Errorf("%q: %s reads as %+v", subject, req, got)
		}
	}
}

// TestParseDirect reads direct get answers as the server sends them, and
// broken ones: each broken one is an error that names what is wrong.
func TestParseDirect(t *testing.T) {
	ok := nats.Header{
		jetstream.StreamHeader: {"AGENT_HISTORY"}, jetstream.SequenceHeader: {"42"},
		jetstream.TimeStampHeaer: {"2026-12-03T10:00:00.123456789Z"}, jetstream.SubjectHeader: {"agent.history.a.s"},
		HeaderRunID: {"r1"},
	}
	without := func(key string) nats.Header {
		h := nats.Header{}
		for k, v := range ok {
			if k != key {
				h[k] = v
			}
		}
		return h
	}
	with := func(key, value string) nats.Header {
		h := without(key)
		h.Set(key, value)
		return h
	}
	for _, c := range []struct {
		name   string
		h      nats.Header
		data   string
		err    error
		substr string
	}{
		{name: "found", h: ok, data: "x"},
		{name: "not found", h: nats.Header{"Status": {"404"}, "Description": {"Message Not Found"}}, err: jetstream.ErrMsgNotFound},
		{name: "no responders", h: nats.Header{"Status": {"503"}}, err: jetstream.ErrNoStreamResponse},
		{name: "timeout status", h: nats.Header{"Status": {"408"}, "Description": {"Request Timeout"}}, substr: "status 408: Request Timeout"},
		{name: "status without description", h: nats.Header{"Status": {"400"}}, substr: "status 400: unable to get message"},
		{name: "no headers", data: "x", substr: "without the Nats-Stream header"},
		{name: "no sequence", h: without(jetstream.SequenceHeader), data: "x", substr: "header Nats-Sequence"},
		{name: "bad sequence", h: with(jetstream.SequenceHeader, "-1"), data: "x", substr: "header Nats-Sequence"},
		{name: "bad time", h: with(jetstream.TimeStampHeaer, "yesterday"), data: "x", substr: "header Nats-Time-Stamp"},
		{name: "no subject", h: without(jetstream.SubjectHeader), data: "x", substr: "without the Nats-Subject header"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseDirect(&nats.Msg{Header: c.h, Data: []byte(c.data)})
			switch {
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
			case c.substr != "":
				if err == nil || !strings.Contains(err.Error(), c.substr) {
					t.Fatalf("err %v, want one with %q", err, c.substr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				want := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC)
				if m.Sequence != 42 || !m.Time.Equal(want) || m.Subject != "agent.history.a.s" || string(m.Data) != "x" || m.Header.Get(HeaderRunID) != "r1" {
					t.Fatalf("read %+v", m)
				}
			}
		})
	}
}

// TestLoadWithoutDirectGets loads a history from a stream made before the
// stores allowed direct gets: the load reads it with the stream API, the
// same records as with direct gets.
func TestLoadWithoutDirectGets(t *testing.T) {
	s := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, s)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subjects, _ := bus.NewSubjects("")
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamName(subjects), Subjects: []string{subjects.Prefix + ".history.>"}}); err != nil {
		t.Fatal(err)
	}
	st, err := Attach(ctx, js, subjects)
	if err != nil {
		t.Fatal(err)
	}
	if st.direct {
		t.Fatal("a stream without direct gets was taken for one with them")
	}
	st.writer = "w"
	w := st.Writer("default", "s", 0, ownership.Unfenced, ownership.Fence{})
	for _, text := range []string{"one", "two", "three"} {
		if _, err := w.Append(ctx, "run", agentfleet.NewUserMessage(text)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Load(ctx, "default", "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Records) != 3 || got.LastSeq != 3 {
		t.Fatalf("loaded %d records, last %d: %+v", len(got.Records), got.LastSeq, got)
	}
	if u, ok := got.Records[2].Message.(*agentfleet.UserMessage); !ok || u.Content[0].Text != "three" {
		t.Fatalf("third record %+v", got.Records[2].Message)
	}
}
