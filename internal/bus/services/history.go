package services

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/nats-io/nats.go"
)

// The bounds of one history page.
const (
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
	// historyRequestMax bounds the request: it holds two numbers.
	historyRequestMax = 1024
	// historyReserve is left of the connection's max payload for the
	// reply's own fields and the NATS header.
	historyReserve = 16 << 10
)

// answerHistory subscribes Subjects.SessionHistory: each request is
// answered with one page of the session's stored records.
func (a *answerer) answerHistory() (*nats.Subscription, error) {
	return a.subscribe(a.cfg.Subjects.SessionHistoryWildcard(), func(m *nats.Msg) {
		if !a.mayAnswer(m) {
			return
		}
		go a.answerHistoryRequest(m)
	})
}

func (a *answerer) answerHistoryRequest(m *nats.Msg) {
	r := a.historyReply(m)
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(&client.HistoryReplyJSON{Agent: r.Agent, Session: r.Session, Records: []client.HistoryRecordJSON{}, Error: fmt.Sprintf("the page does not encode: %v", err)})
	}
	if err := a.nc.Publish(m.Reply, b); err != nil {
		a.cfg.Logger.Warn("history reply", "subject", m.Subject, "err", err)
	}
}

func (a *answerer) historyReply(m *nats.Msg) *client.HistoryReplyJSON {
	agent, session, err := a.cfg.Subjects.ParseSessionHistory(m.Subject)
	if err != nil {
		return &client.HistoryReplyJSON{Records: []client.HistoryRecordJSON{}, Error: err.Error()}
	}
	fail := func(err error) *client.HistoryReplyJSON {
		return &client.HistoryReplyJSON{Agent: agent, Session: session, Records: []client.HistoryRecordJSON{}, Error: err.Error()}
	}
	req, err := ParseHistoryRequest(m.Data)
	if err != nil {
		return fail(fmt.Errorf("history request on %s: %w", m.Subject, err))
	}
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	loaded, err := a.agents.SessionHistory(ctx, agent, session)
	if err != nil {
		return fail(err)
	}
	page := HistoryPage(loaded, req, int(a.nc.MaxPayload())-historyReserve)
	page.Agent, page.Session = agent, session
	return page
}

// ParseHistoryRequest decodes a history request: empty, or a JSON
// client.HistoryRequestJSON with no other field; a limit of 0 becomes
// DefaultHistoryLimit. The error says what is wrong.
func ParseHistoryRequest(data []byte) (client.HistoryRequestJSON, error) {
	var req client.HistoryRequestJSON
	if len(data) > historyRequestMax {
		return req, fmt.Errorf("the request is %d bytes, at most %d", len(data), historyRequestMax)
	}
	if len(data) > 0 {
		if err := strictJSON(data, &req); err != nil {
			return req, fmt.Errorf("the request is not a history request {\"from_seq\",\"limit\"}: %v", err)
		}
	}
	switch {
	case req.Limit < 0 || req.Limit > MaxHistoryLimit:
		return req, fmt.Errorf("limit %d: want 1 to %d (0 for %d)", req.Limit, MaxHistoryLimit, DefaultHistoryLimit)
	case req.Limit == 0:
		req.Limit = DefaultHistoryLimit
	}
	return req, nil
}

// HistoryPage returns the page of l that req asks for: its records from
// req.FromSeq on, at most req.Limit of them and, encoded, at most
// maxBytes; a record whose body alone would pass maxBytes is listed
// without it (Omitted), as are the records of an envelope past it. Records of one stored message are never split
// over two pages, so that Next, a stream sequence, names where the next
// page starts. The skipped records of the page's range are listed too.
func HistoryPage(l *history.Loaded, req client.HistoryRequestJSON, maxBytes int) *client.HistoryReplyJSON {
	r := &client.HistoryReplyJSON{Records: []client.HistoryRecordJSON{}, LastSeq: l.LastSeq}
	size, n := 0, 0
	var upTo uint64 // the stored message of the last record taken
	for i := range l.Records {
		rec := &l.Records[i]
		if rec.Seq < req.FromSeq {
			continue
		}
		j := recordJSON(rec)
		if len(j.Body)+recordOverhead > maxBytes {
			j.Size, j.Body, j.Omitted = len(j.Body), nil, true
		}
		cost := len(j.Body) + recordOverhead
		if rec.Seq != upTo && n > 0 && (n >= req.Limit || size+cost > maxBytes) {
			r.Next = rec.Seq // the page ends before this stored message
			break
		}
		if rec.Seq == upTo && size+cost > maxBytes {
			// The rest of an envelope that does not fit whole.
			j.Size, j.Body, j.Omitted = len(j.Body), nil, true
			cost = recordOverhead
		}
		r.Records = append(r.Records, j)
		size += cost
		n++
		upTo = rec.Seq
	}
	end := l.LastSeq
	if r.Next != 0 {
		end = r.Next - 1
	}
	for _, s := range l.Skipped {
		if s.Seq >= req.FromSeq && s.Seq <= end {
			r.Skipped = append(r.Skipped, client.HistorySkipJSON{Seq: s.Seq, Index: s.Index, Error: s.Err.Error()})
		}
	}
	return r
}

// recordOverhead bounds what a record's fields other than its body take
// in a page: run ids and writers are tokens of at most a few hundred bytes.
const recordOverhead = 512

// strictJSON decodes data into v, refusing unknown fields and anything
// after the value.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// recordJSON is rec as a history page lists it.
func recordJSON(rec *history.Record) client.HistoryRecordJSON {
	j := client.HistoryRecordJSON{Seq: rec.Seq, Index: rec.Index, RunID: rec.RunID, Writer: rec.Writer}
	var body any
	switch {
	case rec.Message != nil:
		j.Kind, body = rec.Message.MessageRole(), rec.Message
	case rec.Final != nil:
		j.Kind, body = "end", rec.Final
	case rec.Approval != nil:
		j.Kind, body = "approval", rec.Approval
	case rec.Decision != nil:
		j.Kind, body = "decision", rec.Decision
	case rec.Summary != nil:
		j.Kind, body = "summary", rec.Summary
	case rec.Handoff != nil:
		j.Kind, body = "handoff", rec.Handoff
	case rec.Forked != nil:
		j.Kind, body = "forked", rec.Forked
	case rec.Retained != nil:
		j.Kind, body = "retained", rec.Retained
	default:
		j.Kind = "end"
	}
	if body != nil {
		j.Body, _ = json.Marshal(body)
	}
	return j
}
