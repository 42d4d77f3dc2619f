package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
)

// HistoryRequestJSON is the request of a Subjects.SessionHistory: the
// records from stream sequence FromSeq on (0: from the first), at most
// Limit of them (0: the orchestrator's default, 100; at most 1,000). An
// empty request asks for the first page.
type HistoryRequestJSON struct {
	FromSeq uint64 `json:"from_seq,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// HistoryReplyJSON is one page of a session's stored records, oldest
// first, or why there is none. Next is the from_seq of the next page, 0
// when this page ends the history; LastSeq is the stream sequence of the
// session's last stored message (0: nothing stored).
type HistoryReplyJSON struct {
	Agent   string              `json:"agent"`
	Session string              `json:"session"`
	Records []HistoryRecordJSON `json:"records"`
	Skipped []HistorySkipJSON   `json:"skipped,omitempty"`
	LastSeq uint64              `json:"last_seq"`
	Next    uint64              `json:"next,omitempty"`
	Error   string              `json:"error,omitempty"`
}

// HistoryRecordJSON is one stored record: where it is (Seq, Index), the
// run it belongs to, who wrote it, its kind and its content. Kind is
// "user", "assistant" or "tool" for a message, "end" for the end of a run
// (Final its final message), "approval", "decision", "summary",
// "handoff", "forked" or "retained". Body is the message, final message, approval
// request, decision, summary, handoff or fork as JSON; a record too large for one reply
// has none, and Omitted set, with Size its bytes.
type HistoryRecordJSON struct {
	Seq     uint64          `json:"seq"`
	Index   int             `json:"index"`
	RunID   string          `json:"run_id,omitempty"`
	Writer  string          `json:"writer,omitempty"`
	Kind    string          `json:"kind"`
	Body    json.RawMessage `json:"body,omitempty"`
	Omitted bool            `json:"omitted,omitempty"`
	Size    int             `json:"size,omitempty"`
}

// HistorySkipJSON is a stored record that did not decode, and why.
type HistorySkipJSON struct {
	Seq   uint64 `json:"seq"`
	Index int    `json:"index"`
	Error string `json:"error"`
}

// History asks the orchestrators for one page of a session's stored
// records. It fails when no orchestrator answers, or when the answer says
// why there is none (an unknown agent, an orchestrator without JetStream).
func History(ctx context.Context, nc *nats.Conn, subjects bus.Subjects, agent, session string, req HistoryRequestJSON) (*HistoryReplyJSON, error) {
	if err := bus.CheckToken("agent", agent); err != nil {
		return nil, err
	}
	if err := bus.CheckToken("session", session); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(req)
	m, err := nc.RequestWithContext(ctx, subjects.SessionHistory(agent, session), b)
	if errors.Is(err, nats.ErrNoResponders) {
		return nil, fmt.Errorf("history of %s/%s: %w", agent, session, ErrNoOrchestrator)
	}
	if err != nil {
		return nil, fmt.Errorf("history of %s/%s: %w", agent, session, err)
	}
	return DecodeHistory(agent, session, m.Data)
}

// DecodeHistory decodes an answer on Subjects.SessionHistory; the error
// says why it is none, or why the orchestrator gave no page.
func DecodeHistory(agent, session string, data []byte) (*HistoryReplyJSON, error) {
	var r HistoryReplyJSON
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("history of %s/%s: the answer is not a history page: %v", agent, session, err)
	}
	if r.Error != "" {
		return &r, fmt.Errorf("history of %s/%s: %s", agent, session, r.Error)
	}
	return &r, nil
}
