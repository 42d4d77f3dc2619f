package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/events"
)

// eventsSubject returns the wildcard of the events of agent and session,
// either of which may be "*".
func (m *Main) eventsSubject(agent, session string) string {
	return m.subjects.Prefix + ".events." + agent + "." + session + ".>"
}

// tail prints the events of <prefix>.events.<agent|*>.<session|*>.> until
// ctx ends.
func (m *Main) tail(ctx context.Context) error {
	agent, session := "*", "*"
	if len(m.pos) > 0 {
		agent = m.pos[0]
	}
	if len(m.pos) > 1 {
		session = m.pos[1]
	}
	subject := m.eventsSubject(agent, session)
	if m.Since > 0 {
		return m.replay(ctx, subject)
	}
	r, err := m.conn.Subscribe(subject)
	if err != nil {
		return err
	}
	defer r.Close()
	fmt.Fprintf(m.Stderr, "following %s (Ctrl-C to stop)\n", subject)
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-m.conn.Denied():
			return err
		case msg := <-r.C:
			m.printEvent(msg.Subject, msg.Data)
		}
	}
}

// printEvent prints one event as a readable line, or raw with --json.
func (m *Main) printEvent(subject string, data []byte) {
	if m.JSON {
		fmt.Fprintf(m.Stdout, "%s\n", data)
		return
	}
	var e agentfleet.Event
	if err := json.Unmarshal(data, &e); err != nil {
		fmt.Fprintf(m.Stderr, "event on %s does not decode: %v\n", subject, err)
		return
	}
	fmt.Fprintln(m.Stdout, formatEvent(&e, time.Now()))
}

// formatEvent returns the readable line of an event: its time
// (HH:MM:SS.mmm, local), agent/session, kind, and what matters for the
// kind. received stands in for a missing event time.
func formatEvent(e *agentfleet.Event, received time.Time) string {
	t := e.Time
	if t.IsZero() {
		t = received
	}
	var b strings.Builder
	b.WriteString(t.Local().Format("15:04:05.000"))
	if p := e.Parent; p != nil {
		// A child run's events are indented by its depth.
		b.WriteString(strings.Repeat("  ", min(len(p.Chain), 8)))
	}
	fmt.Fprintf(&b, " %s/%s %s", e.Agent, e.Session, e.Type)
	if d := eventDetail(e); d != "" {
		b.WriteByte(' ')
		b.WriteString(d)
	}
	if p := e.Parent; p != nil && (e.Type == agentfleet.EventRunStart || e.Type == agentfleet.EventRunResumed) {
		fmt.Fprintf(&b, " asked by %s/%s call %s", p.Agent, p.Session, p.ToolCallID)
	}
	return b.String()
}

func eventDetail(e *agentfleet.Event) string {
	switch e.Type {
	case agentfleet.EventTurnStart, agentfleet.EventTurnEnd:
		return "turn " + strconv.Itoa(e.Turn)
	case agentfleet.EventMessageUpdate:
		return quote(e.Delta, 80)
	case agentfleet.EventMessageEnd:
		if e.Message == nil {
			return ""
		}
		d := quote(agentfleet.JoinText(e.Message.Content), 80)
		if n := len(e.Message.ToolCalls()); n > 0 {
			d += fmt.Sprintf(" +%d tool call(s)", n)
		}
		return d
	case agentfleet.EventToolStart:
		return e.ToolName + " " + compactJSON(e.Arguments, 120)
	case agentfleet.EventToolUpdate:
		return e.ToolName + " " + compactJSON(e.Partial, 120)
	case agentfleet.EventToolEnd:
		d := e.ToolName + " " + formatMS(e.DurationMS) + " " + toolOutcome(e, 120)
		if e.Worker != "" {
			d += " worker=" + e.Worker
		}
		return d
	case agentfleet.EventRunEnd:
		d := string(e.StopReason)
		if e.Message != nil && e.Message.ErrorMessage != "" {
			d += ": " + e.Message.ErrorMessage
		}
		return d
	case agentfleet.EventContextCompacted:
		return fmt.Sprintf("%s (%s): %d turn(s), %d message(s) left out, %d result(s) shortened, ~%d → ~%d tokens",
			e.Strategy, e.Reason, e.DroppedTurns, e.DroppedMessages, e.ShortenedResults, e.TokensBefore, e.TokensAfter)
	case agentfleet.EventBudgetExceeded:
		return fmt.Sprintf("%s: %d of %d", e.Budget, e.Used, e.Limit)
	case agentfleet.EventSessionHandoff:
		d := e.From + " → " + e.To
		if e.Reason != "" {
			d += ": " + quote(e.Reason, 80)
		}
		return d
	case agentfleet.EventError:
		d := e.ErrorMessage
		if e.Subject != "" {
			d += " (subject " + e.Subject + ")"
		}
		return d
	}
	return ""
}

// toolOutcome says "ok", or "error: <text>" for an error result.
func toolOutcome(e *agentfleet.Event, max int) string {
	if !e.IsError {
		return "ok"
	}
	text := ""
	if e.Result != nil {
		text = agentfleet.JoinText(e.Result.Content)
	}
	return "error: " + shorten(oneLine(text), max)
}

// formatMS formats a duration in milliseconds: 0.4ms, 12ms, 1.25s.
func formatMS(ms float64) string {
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	default:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + "s"
	}
}

// compactJSON returns v as one line of JSON, at most max bytes.
func compactJSON(v any, max int) string {
	if v == nil {
		return "{}"
	}
	if s, ok := v.(string); ok {
		return shorten(oneLine(s), max)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return shorten(string(b), max)
}

// quote returns s quoted, cut to about max bytes.
func quote(s string, max int) string {
	if len(s) <= max {
		return strconv.Quote(s)
	}
	return strconv.Quote(shorten(s, max))
}

// shorten cuts s to at most max bytes on a rune boundary, marking the cut.
func shorten(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// replay prints the events on subject kept in the fleet's event stream from
// --since ago, then goes on with new ones as the stream stores them, until
// ctx ends. The feed's ordered consumer keeps them in order and without
// gaps.
func (m *Main) replay(ctx context.Context, subject string) error {
	ctx, cancel := m.conn.UntilDenied(ctx)
	defer cancel()
	feed := events.OpenEventFeed(ctx, m.conn.NATS(), m.subjects)
	denied := func() error {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
		return nil
	}
	if !feed.Retained() {
		if err := denied(); err != nil {
			return err
		}
		return fmt.Errorf("the event stream %s is not there (the orchestrator keeps it when its NATS has JetStream)", feed.Stream())
	}
	start := time.Now().Add(-m.Since)
	fmt.Fprintf(m.Stderr, "replaying %s from %s, then following (Ctrl-C to stop)\n", subject, start.Local().Format("15:04:05"))
	err := feed.Replay(ctx, subject, events.ReplayFrom{Since: start}, 0, func(e events.FeedEvent) {
		m.printEvent(e.Subject, e.Data)
	})
	if derr := denied(); derr != nil {
		return derr
	}
	return err
}
