package a2aserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/agentfleet/agentfleet/internal/bus"
)

// keyPrefix begins the client message id of every user message an A2A
// client sent: a2a-<32 hex digits>.
const keyPrefix = "a2a-"

// MessageKey is the fleet's client message id of the A2A message
// messageID sent to agent in session: a hash, so that the same A2A
// message sent again is the same user message (the session never runs
// it twice) and the same task.
func MessageKey(agent, session, messageID string) string {
	sum := sha256.Sum256([]byte(agent + "\x00" + session + "\x00" + messageID))
	return keyPrefix + hex.EncodeToString(sum[:16])
}

// TaskID is the A2A task id of the run that answers the user message key
// of session: <session>.<key>. A session name holds no dot, so the id
// names both without a lookup, and any orchestrator finds the task in
// the session's stored history.
func TaskID(session, key string) a2a.TaskID { return a2a.TaskID(session + "." + key) }

// ParseTaskID returns the session and message key a task id names, or an
// error that says what is wrong with it.
func ParseTaskID(id a2a.TaskID) (session, key string, err error) {
	s := string(id)
	session, key, ok := strings.Cut(s, ".")
	if !ok {
		return "", "", fmt.Errorf("task id %q is not one of this server's (<session>.a2a-<32 hex digits>)", clip(s))
	}
	if err := bus.CheckToken("session", session); err != nil {
		return "", "", fmt.Errorf("task id %q: %w", clip(s), err)
	}
	hexPart, ok := strings.CutPrefix(key, keyPrefix)
	if !ok || len(hexPart) != 32 || strings.Trim(hexPart, "0123456789abcdef") != "" {
		return "", "", fmt.Errorf("task id %q is not one of this server's (<session>.a2a-<32 hex digits>)", clip(s))
	}
	return session, key, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
