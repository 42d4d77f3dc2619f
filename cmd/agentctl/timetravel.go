package main

// The commands that go back in a session's history: history prints its
// stored records, fork copies them up to a point into a new session.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/nats-io/nats.go/jetstream"
)

func checkHistory(m *Main, pos []string) error {
	if len(pos) != 2 {
		return fmt.Errorf("want <agent> <session>, got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	return checkName("session", pos[1])
}

func checkFork(m *Main, pos []string) error {
	if len(pos) != 3 {
		return fmt.Errorf("want <agent> <session> <new-session>, got %d argument(s)", len(pos))
	}
	for i, what := range []string{"agent", "session", "new session"} {
		if err := checkName(what, pos[i]); err != nil {
			return err
		}
	}
	if m.At != 0 && m.BeforeRun != "" {
		return errors.New("give --at or --before-run, not both")
	}
	return nil
}

// recordJSON is one record as history --json prints it.
type recordJSON struct {
	Seq    uint64          `json:"seq"`
	Index  int             `json:"index"`
	RunID  string          `json:"run_id"`
	Writer string          `json:"writer,omitempty"`
	Kind   string          `json:"kind"`
	Data   json.RawMessage `json:"data"`
}

// kindOf names what a record holds, and returns it.
func kindOf(r history.Record) (string, any) {
	switch {
	case r.Message != nil:
		return r.Message.MessageRole(), r.Message
	case r.Final != nil:
		return history.RecordRunEnd, r.Final
	case r.Approval != nil:
		return history.RecordApproval, r.Approval
	case r.Decision != nil:
		return history.RecordDecision, r.Decision
	case r.Summary != nil:
		return history.RecordSummary, r.Summary
	case r.Handoff != nil:
		return history.RecordHandoff, r.Handoff
	case r.Forked != nil:
		return history.RecordForked, r.Forked
	}
	return "unknown", nil
}

// history prints a session's records, read from the history stream.
func (m *Main) history(ctx context.Context) error {
	agent, session := m.pos[0], m.pos[1]
	ctx, done := m.conn.UntilDenied(ctx)
	defer done()
	js, err := jetstream.New(m.conn.NATS())
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, m.timeout(30*time.Second))
	defer cancel()
	store, err := history.Attach(tctx, js, m.subjects)
	if err != nil {
		return m.deniedOr(ctx, err)
	}
	l, err := store.Load(tctx, agent, session)
	if err != nil {
		return m.deniedOr(ctx, err)
	}
	if l.LastSeq == 0 {
		return fmt.Errorf("session %s of agent %s has no stored records", session, agent)
	}
	for _, sk := range l.Skipped {
		fmt.Fprintf(m.Stderr, "record %d.%d skipped: %v\n", sk.Seq, sk.Index, sk.Err)
	}
	if m.JSON {
		out := make([]recordJSON, 0, len(l.Records))
		for _, r := range l.Records {
			kind, v := kindOf(r)
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			out = append(out, recordJSON{Seq: r.Seq, Index: r.Index, RunID: r.RunID, Writer: r.Writer, Kind: kind, Data: b})
		}
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tRUN\tWRITER\tKIND\tCONTENT")
	for _, r := range l.Records {
		kind, _ := kindOf(r)
		fmt.Fprintf(tw, "%d.%d\t%s\t%s\t%s\t%s\n", r.Seq, r.Index, r.RunID, r.Writer, kind, brief(r))
	}
	return tw.Flush()
}

// brief is one line of what a record says, at most 72 runes.
func brief(r history.Record) string {
	var s string
	switch {
	case r.Message != nil:
		s = contentLine(r.Message)
	case r.Final != nil:
		s = contentLine(r.Final)
	case r.Approval != nil:
		s = "call " + r.Approval.ToolCallID
	case r.Decision != nil:
		s = "call " + r.Decision.ToolCallID
	case r.Summary != nil:
		s = fmt.Sprintf("covers %d: %s", r.Summary.Covers, r.Summary.Text)
	case r.Handoff != nil:
		s = r.Handoff.From + " -> " + r.Handoff.To
	case r.Forked != nil:
		s = fmt.Sprintf("from %s at %d (%d records)", r.Forked.Source, r.Forked.AtSeq, r.Forked.Records)
	}
	s = strings.Join(strings.Fields(s), " ")
	if rs := []rune(s); len(rs) > 72 {
		s = string(rs[:71]) + "…"
	}
	return s
}

func contentLine(m agentfleet.Message) string {
	var parts []string
	var content []agentfleet.Content
	switch v := m.(type) {
	case *agentfleet.UserMessage:
		content = v.Content
	case *agentfleet.AssistantMessage:
		content = v.Content
	case *agentfleet.ToolResultMessage:
		content = v.Content
	}
	for _, c := range content {
		switch c.Type {
		case agentfleet.ContentText:
			parts = append(parts, c.Text)
		case agentfleet.ContentToolCall:
			parts = append(parts, "call "+c.Name+"("+c.ID+")")
		default:
			parts = append(parts, "["+c.Type+"]")
		}
	}
	return strings.Join(parts, " ")
}

// fork asks an orchestrator to fork a session (agent.fork).
func (m *Main) fork(ctx context.Context) error {
	req := timetravel.Request{NewSession: m.pos[2], Point: timetravel.Point{AtSeq: m.At, BeforeRun: m.BeforeRun}}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	data, err := m.conn.Request(ctx, timetravel.Subject(m.subjects, m.pos[0], m.pos[1]), b, m.timeout(30*time.Second))
	if err != nil {
		return err
	}
	var rep timetravel.Reply
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("the fork reply is not JSON: %w", err)
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	if rep.Forked == nil {
		return errors.New("the fork reply says nothing")
	}
	if m.JSON {
		return json.NewEncoder(m.Stdout).Encode(rep.Forked)
	}
	f := rep.Forked
	fmt.Fprintf(m.Stdout, "forked %s of %s into %s: %d records up to %d, then the forked record (%d)\n", f.Source, f.Agent, m.pos[2], f.Records, f.AtSeq, f.LastSeq)
	return nil
}

// timeout is --timeout, or def when it is not set.
func (m *Main) timeout(def time.Duration) time.Duration {
	if m.Timeout > 0 {
		return m.Timeout
	}
	return def
}

// deniedOr returns the server's refusal when that is what ended ctx, else
// err.
func (m *Main) deniedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			return cause
		}
	}
	return err
}
