package erase

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Request is the JSON body of a delete request: Confirm must name the
// session of the subject, so that a stray publish deletes nothing.
type Request struct {
	Confirm string `json:"confirm"`
}

// MaxRequestBytes bounds a delete request; a larger one is refused unread.
const MaxRequestBytes = 1 << 10

// ParseRequest decodes a delete request of session and checks it; the
// error says what is wrong.
func ParseRequest(session string, data []byte) (*Request, error) {
	if len(data) > MaxRequestBytes {
		return nil, fmt.Errorf("delete request of %d bytes, the limit is %d", len(data), MaxRequestBytes)
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("delete request is not JSON of {confirm}: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("delete request holds more than one JSON value")
	}
	if req.Confirm != session {
		return nil, fmt.Errorf("delete request: confirm is %q, want the session's name, %q", clip(req.Confirm), session)
	}
	return &req, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Deleted is what a delete removed: the messages of the session purged
// from each stream, the objects deleted, which orchestrator deleted it
// (By), and which orchestrators held the session and stopped it (Stopped)
// or did not answer (Unanswered: dead, or cut off; the store fences them).
type Deleted struct {
	Agent      string            `json:"agent"`
	Session    string            `json:"session"`
	By         string            `json:"by,omitempty"`
	Messages   map[string]uint64 `json:"messages"`
	Objects    int               `json:"objects"`
	Stopped    []string          `json:"stopped,omitempty"`
	Unanswered []string          `json:"unanswered,omitempty"`
	// Late counts, per stream, what a deposed orchestrator published of
	// the session after the first purge and the settle purge removed
	// (Deleter.Settle); nil when nothing was.
	Late map[string]uint64 `json:"late,omitempty"`
}

// Reply is the JSON answer to a delete request: what was deleted, or why
// not.
type Reply struct {
	Deleted *Deleted `json:"deleted,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// StopReply is an orchestrator's answer on the stop subject: whether it
// held the session (and stopped it), with the runs it stopped, or why it
// could not.
type StopReply struct {
	Orchestrator string   `json:"orchestrator"`
	Held         bool     `json:"held,omitempty"`
	Runs         []string `json:"runs,omitempty"`
	Error        string   `json:"error,omitempty"`
}

// Unanswered returns the members that gave no answer, sorted: answered
// holds those that did.
func Unanswered(members []string, answered map[string]bool) []string {
	var out []string
	for _, m := range members {
		if !answered[m] && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}
