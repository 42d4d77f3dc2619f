package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/client"
)

// historyJSON is what history --json prints: the session's records, page
// after page, as one object.
type historyJSON struct {
	Agent   string                     `json:"agent"`
	Session string                     `json:"session"`
	LastSeq uint64                     `json:"last_seq"`
	Records []client.HistoryRecordJSON `json:"records"`
	Skipped []client.HistorySkipJSON   `json:"skipped,omitempty"`
}

// history prints a session's stored records, asking an orchestrator page
// by page.
func (m *Main) history(ctx context.Context) error {
	agent, session := m.pos[0], m.pos[1]
	all, err := m.loadHistory(ctx, agent, session)
	if err != nil || all == nil {
		return err
	}
	if m.JSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(all)
	}
	if len(all.Records) == 0 && len(all.Skipped) == 0 {
		fmt.Fprintf(m.Stdout, "%s/%s has no stored record\n", agent, session)
		return nil
	}
	for _, r := range all.Records {
		writeRecord(m.Stdout, &r)
	}
	for _, s := range all.Skipped {
		fmt.Fprintf(m.Stdout, "%d.%d  skipped: %s\n", s.Seq, s.Index, s.Error)
	}
	return nil
}

// loadHistory reads all of a session's stored records, asking an
// orchestrator page by page; nil, nil when interrupted.
func (m *Main) loadHistory(ctx context.Context, agent, session string) (*historyJSON, error) {
	wait := m.Timeout
	if wait == 0 {
		wait = defaultAgentToolsWait
	}
	all := &historyJSON{Agent: agent, Session: session, Records: []client.HistoryRecordJSON{}}
	for req := (client.HistoryRequestJSON{Limit: 1000}); ; {
		b, _ := json.Marshal(req)
		data, err := m.conn.Request(ctx, m.subjects.SessionHistory(agent, session), b, wait)
		if errors.Is(err, client.ErrInterrupted) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		page, err := client.DecodeHistory(agent, session, data)
		if err != nil {
			return nil, err
		}
		all.LastSeq = page.LastSeq
		all.Records = append(all.Records, page.Records...)
		all.Skipped = append(all.Skipped, page.Skipped...)
		if page.Next == 0 || page.Next <= req.FromSeq {
			return all, nil
		}
		req.FromSeq = page.Next
	}
}

// writeRecord writes one record as a line: where it is, its run and
// writer (their first 8 characters), its kind and what it says.
func writeRecord(w io.Writer, r *client.HistoryRecordJSON) {
	fmt.Fprintf(w, "%d.%d  run %s  by %s  %-9s %s\n", r.Seq, r.Index, short(r.RunID), short(r.Writer), r.Kind, recordText(r))
}

func short(id string) string {
	if id == "" {
		return "-"
	}
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// recordText is a record's content in a line: a message's text and tool
// calls, at most 120 characters; "(omitted, N bytes)" for a record whose
// body was too large to send.
func recordText(r *client.HistoryRecordJSON) string {
	if r.Omitted {
		return fmt.Sprintf("(omitted, %d bytes)", r.Size)
	}
	var body struct {
		Content    []agentfleet.Content `json:"content"`
		ToolName   string               `json:"tool_name"`
		StopReason string               `json:"stop_reason"`
		IsError    bool                 `json:"is_error"`
		FirstSeq   uint64               `json:"first_seq"` // retained
		Runs       int                  `json:"runs"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return ""
	}
	if r.Kind == "retained" {
		return fmt.Sprintf("%d oldest runs dropped: the history begins at %d", body.Runs, body.FirstSeq)
	}
	var parts []string
	if body.ToolName != "" {
		parts = append(parts, body.ToolName+":")
	}
	if body.IsError {
		parts = append(parts, "error:")
	}
	for _, c := range body.Content {
		switch c.Type {
		case agentfleet.ContentText:
			parts = append(parts, c.Text)
		case agentfleet.ContentToolCall:
			parts = append(parts, fmt.Sprintf("→ %s %s", c.Name, c.Arguments))
		}
	}
	if body.StopReason != "" {
		parts = append(parts, "["+body.StopReason+"]")
	}
	text := strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
	if r := []rune(text); len(r) > 120 {
		text = string(r[:119]) + "…"
	}
	return text
}
