package erase

import (
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// Subject returns the delete subject of a session: a request there deletes
// it.
func Subject(s bus.Subjects, agent, session string) string {
	return s.Prefix + ".delete." + agent + "." + session
}

// Wildcard matches the delete subject of every agent and session.
func Wildcard(s bus.Subjects) string { return s.Prefix + ".delete.*.*" }

// Parse returns the agent and session of a delete subject.
func Parse(s bus.Subjects, subject string) (agent, session string, err error) {
	return parse(s, "delete", subject)
}

// StopSubject returns the subject on which the orchestrators hear that a
// session is being deleted: whichever holds it stops it and answers.
func StopSubject(s bus.Subjects, agent, session string) string {
	return s.Prefix + ".erase." + agent + "." + session
}

// StopWildcard matches StopSubject of every agent and session.
func StopWildcard(s bus.Subjects) string { return s.Prefix + ".erase.*.*" }

// ParseStop returns the agent and session of a stop subject.
func ParseStop(s bus.Subjects, subject string) (agent, session string, err error) {
	return parse(s, "erase", subject)
}

func parse(s bus.Subjects, kind, subject string) (agent, session string, err error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+"."+kind+".")
	agent, session, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return "", "", fmt.Errorf("subject %q: want %s.%s.<agent>.<session>", subject, s.Prefix, kind)
	}
	if err := bus.CheckToken("agent", agent); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if err := bus.CheckToken("session", session); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return agent, session, nil
}

// Target is one place where a session's messages are kept: a stream and
// the subject filter of the session in it.
type Target struct {
	Stream string
	Filter string
}

// Targets returns where the messages of a session are kept, in the order
// they are purged: its history, its approval decisions as published, its
// stored input (every kind, under its partition; after the decisions, which
// the input stream sources), and its events.
func Targets(s bus.Subjects, agent, session string) []Target {
	return []Target{
		{s.StreamName("HISTORY"), s.History(agent, session)},
		{s.StreamName("APPROVE"), s.Approve(agent, session)},
		{s.StreamName("INPUT"), s.StoredSession(agent, session)},
		{s.StreamName("EVENTS"), s.Prefix + ".events." + agent + "." + session + ".>"},
	}
}
