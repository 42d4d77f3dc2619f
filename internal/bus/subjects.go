// Package bus is the base of the fleet's NATS transport: the connection
// (Connect, Drain, secrets kept out of errors), the subjects and their
// tokens, the partition of a session, the headers, the inboxes, the one
// reply guard, the permission probe and the JetStream ensure and retry that
// every part needs.
//
// The concerns built on it are packages of their own below it: server (the
// embedded nats-server), wire (the codec), toolrpc (tool calls), fleet
// (discovery), input, events and client (the public subjects). bus itself
// may import only nats.go, internal/retry and the standard library; it
// links no nats-server and imports nothing else of the fleet.
package bus

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go"
)

// Conn is a NATS connection; the alias lets packages above bus hold one
// without importing nats.go.
type Conn = nats.Conn

// DefaultPrefix is the first token of every subject of the fleet.
const DefaultPrefix = "agent"

// QueueGroup is the queue group of every tool endpoint, so that each call
// goes to one worker.
const QueueGroup = "agentfleet"

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ValidToken reports whether s may stand as an agent, session or tool name:
// one NATS subject token of letters, digits, '-' and '_'.
func ValidToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// CheckToken returns an error saying why s is not a valid token; what names
// the token ("agent", "session", "tool").
func CheckToken(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%s name is empty", what)
	case len(s) > 128:
		return fmt.Errorf("%s name is %d bytes long, the limit is 128", what, len(s))
	case !tokenRE.MatchString(s):
		return fmt.Errorf("%s name %q may hold only letters, digits, '-' and '_'", what, s)
	}
	return nil
}

// Subjects builds the subjects of one fleet, under one prefix.
type Subjects struct {
	Prefix string
}

// NewSubjects returns the subjects under prefix (DefaultPrefix if empty). The
// prefix may hold several tokens ("acme.agent") but no wildcard.
func NewSubjects(prefix string) (Subjects, error) {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	for _, tok := range strings.Split(prefix, ".") {
		if !ValidToken(tok) {
			return Subjects{}, fmt.Errorf("subject prefix %q: token %q may hold only letters, digits, '-' and '_'", prefix, tok)
		}
	}
	return Subjects{Prefix: prefix}, nil
}

// Input kinds: the second token of a client subject.
const (
	KindIn    = "in"
	KindAsk   = "ask"
	KindSteer = "steer"
	KindAbort = "abort"
	// KindRelay is not a client kind: it is the subject under which an
	// orchestrator stores an ask or abort it took from the core subjects,
	// for the orchestrator that owns the session (see relay.go).
	KindRelay = "relay"
)

// Client returns the subject of kind (in, ask, steer, abort) for a session.
func (s Subjects) Client(kind, agent, session string) string {
	return s.Prefix + "." + kind + "." + agent + "." + session
}

// ClientWildcard returns the subscription subject of one input kind.
func (s Subjects) ClientWildcard(kind string) string { return s.Prefix + "." + kind + ".*.*" }

// Out returns the subject of a session's final messages.
func (s Subjects) Out(agent, session string) string {
	return s.Prefix + ".out." + agent + "." + session
}

// Event returns the subject of one event.
func (s Subjects) Event(agent, session, kind string) string {
	return s.Prefix + ".events." + agent + "." + session + "." + kind
}

// Events returns the wildcard of every event.
func (s Subjects) Events() string { return s.Prefix + ".events.>" }

// Tool returns the subject of a tool's endpoint.
func (s Subjects) Tool(name string) string { return s.Prefix + ".tool." + name }

// WorkerTool returns the subject on which only the worker of instance id
// takes calls of tool name (fleet.MetaDirect), beside the tool's queue
// group.
func (s Subjects) WorkerTool(name, id string) string { return s.Prefix + ".tool." + name + "." + id }

// Cancel returns the subject a worker listens on for cancellations.
func (s Subjects) Cancel(workerID string) string { return s.Prefix + ".worker." + workerID + ".cancel" }

// IsCancel reports whether subject is a worker's cancel subject under this
// prefix: <prefix>.worker.<id>.cancel with a valid id token.
func (s Subjects) IsCancel(subject string) bool {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".worker.")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, ".cancel")
	return ok && ValidToken(id)
}

// Fleet returns the subject on which workers announce that they joined or
// left, so that orchestrators refresh their discovery at once.
func (s Subjects) Fleet() string { return s.Prefix + ".fleet" }

// ParseClient splits a client subject into kind, agent and session. The error
// says which token is at fault.
func (s Subjects) ParseClient(subject string) (kind, agent, session string, err error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".")
	if !ok {
		return "", "", "", fmt.Errorf("subject %q is not under prefix %q", subject, s.Prefix)
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return "", "", "", fmt.Errorf("subject %q: want %s.<kind>.<agent>.<session>", subject, s.Prefix)
	}
	kind, agent, session = parts[0], parts[1], parts[2]
	if err := CheckToken("agent", agent); err != nil {
		return "", "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if err := CheckToken("session", session); err != nil {
		return "", "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return kind, agent, session, nil
}

// StreamName returns the JetStream stream name of a fleet's kind of stream
// ("INPUT", "HISTORY", "EVENTS"): the prefix upper-cased, dots as '_'.
func (s Subjects) StreamName(kind string) string {
	return strings.ToUpper(strings.ReplaceAll(s.Prefix, ".", "_")) + "_" + kind
}

// History returns the subject of a session's stored conversation.
func (s Subjects) History(agent, session string) string {
	return s.Prefix + ".history." + agent + "." + session
}

// AgentTools returns the request subject on which the orchestrator answers
// with the tools an agent sees: the agent's ask subject without a session.
// It is under the ask subjects so that the roles that may ask (and the
// orchestrator that answers asks) may use it with no permission of its own;
// the input subscriptions take four tokens, so it is not taken for input.
func (s Subjects) AgentTools(agent string) string { return s.Prefix + "." + KindAsk + "." + agent }

// AgentToolsWildcard matches AgentTools of every agent.
func (s Subjects) AgentToolsWildcard() string { return s.Prefix + "." + KindAsk + ".*" }

// ParseAgentTools returns the agent of an AgentTools subject.
func (s Subjects) ParseAgentTools(subject string) (string, error) {
	agent, ok := strings.CutPrefix(subject, s.Prefix+"."+KindAsk+".")
	if !ok || strings.Contains(agent, ".") {
		return "", fmt.Errorf("subject %q: want %s.%s.<agent>", subject, s.Prefix, KindAsk)
	}
	if err := CheckToken("agent", agent); err != nil {
		return "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return agent, nil
}

// SessionHistory returns the request subject on which an orchestrator
// answers with a session's stored records: the session's ask subject with
// a fifth token, "history". Like AgentTools it lies under the ask subjects,
// so that whoever may ask the session may read what it holds, with no
// permission of its own; the input subscriptions take four tokens, so it
// is never taken for input.
func (s Subjects) SessionHistory(agent, session string) string {
	return s.Prefix + "." + KindAsk + "." + agent + "." + session + ".history"
}

// SessionHistoryWildcard matches SessionHistory of every session.
func (s Subjects) SessionHistoryWildcard() string {
	return s.Prefix + "." + KindAsk + ".*.*.history"
}

// ParseSessionHistory returns the agent and session of a SessionHistory
// subject; the error says which token is at fault.
func (s Subjects) ParseSessionHistory(subject string) (agent, session string, err error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+"."+KindAsk+".")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 || parts[2] != "history" {
		return "", "", fmt.Errorf("subject %q: want %s.%s.<agent>.<session>.history", subject, s.Prefix, KindAsk)
	}
	if err := CheckToken("agent", parts[0]); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if err := CheckToken("session", parts[1]); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return parts[0], parts[1], nil
}

// Call returns the subject on which an orchestrator runs one call of an
// agent's tools for a client outside any run (agentctl mcp):
// <prefix>.call.<agent>.<session>. The session names the caller in the
// call's events, which go out on its event subjects.
func (s Subjects) Call(agent, session string) string {
	return s.Prefix + ".call." + agent + "." + session
}

// CallWildcard matches Call of every agent and session.
func (s Subjects) CallWildcard() string { return s.Prefix + ".call.*.*" }

// ParseCall returns the agent and session of a Call subject.
func (s Subjects) ParseCall(subject string) (agent, session string, err error) {
	rest, ok := strings.CutPrefix(subject, s.Prefix+".call.")
	agent, session, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 {
		return "", "", fmt.Errorf("subject %q: want %s.call.<agent>.<session>", subject, s.Prefix)
	}
	if err := CheckToken("agent", agent); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	if err := CheckToken("session", session); err != nil {
		return "", "", fmt.Errorf("subject %q: %w", subject, err)
	}
	return agent, session, nil
}

// KindApprove is the client kind of a person's decision on a tool call
// that waits for approval: <prefix>.approve.<agent>.<session>. Like an ask,
// it is relayed through the input stream to the session's owner, which
// answers on the publisher's reply subject.
const KindApprove = "approve"

// Approve returns the subject of a session's approval decisions.
func (s Subjects) Approve(agent, session string) string {
	return s.Client(KindApprove, agent, session)
}
