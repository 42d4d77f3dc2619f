package bus

import (
	"errors"
	"fmt"
	"strings"
)

// ServiceImportReply is the prefix under which nats-server maps the reply
// subject of a request that crossed accounts through a service import
// (_R_.<token>...): an answer there goes back to the requester's own reply
// subject in the requester's account, and nowhere in the fleet's.
const ServiceImportReply = "_R_"

// DefaultReplyInboxes are the inbox prefixes a zero ReplyGuard answers.
// Per-user inbox prefixes live under DefaultInboxPrefix (_INBOX.<user>), so
// that one publish right, _INBOX.>, lets the fleet answer every user.
var DefaultReplyInboxes = []string{DefaultInboxPrefix, ServiceImportReply}

// maxReplyLen bounds a reply subject; inboxes are tens of bytes.
const maxReplyLen = 512

// ErrReplyRefused is wrapped by every refusal of ReplyGuard.Check.
var ErrReplyRefused = errors.New("reply subject refused")

// ReplyGuard decides whether a process of the fleet may publish on the reply
// subject that a request came with. Every answer of the fleet over NATS goes
// through one: the orchestrator's answers to asks, aborts, approval
// decisions, tool lists and direct calls, its refusals of bad input, and a
// worker's frames and refusals. A reply is a subject chosen by whoever sent
// the request, and the process publishes on it with its own rights, which
// may reach streams, KV buckets, other sessions' subjects and the JetStream
// API; so only inbox space is answered: subjects under one of Inboxes, of
// plain tokens.
//
// The zero value answers replies under DefaultReplyInboxes. Check is a pure
// function of its receiver and argument, safe for concurrent use.
type ReplyGuard struct {
	// Inboxes are the inbox prefixes that replies may be under; each is
	// one or more plain tokens, none a system subject or under the
	// fleet's prefix. Optional; default DefaultReplyInboxes: the fleet's
	// programs use DefaultInboxPrefix, per-user inbox prefixes must lie under
	// it, and clients in an account of their own reach the fleet through
	// service imports, whose replies the server maps under
	// ServiceImportReply.
	Inboxes []string
}

// Check returns nil if reply may be answered, else an error wrapping
// ErrReplyRefused that says why.
func (g ReplyGuard) Check(reply string) error {
	switch {
	case reply == "":
		return fmt.Errorf("%w: the request has no reply subject", ErrReplyRefused)
	case len(reply) > maxReplyLen:
		return fmt.Errorf("%w: reply subject is %d bytes long, the limit is %d", ErrReplyRefused, len(reply), maxReplyLen)
	case !plainSubject(reply):
		return fmt.Errorf("%w: reply subject %q is not a plain subject (tokens of letters, digits, '-' and '_', no wildcard)", ErrReplyRefused, clip(reply))
	}
	inboxes := g.Inboxes
	if len(inboxes) == 0 {
		inboxes = DefaultReplyInboxes
	}
	for _, in := range inboxes {
		if under(reply, in) {
			return nil
		}
	}
	return fmt.Errorf("%w: reply subject %q is not an inbox (under %s.)", ErrReplyRefused, reply, strings.Join(inboxes, ". or "))
}

// under reports whether subject is prefix followed by at least one token.
func under(subject, prefix string) bool {
	return len(subject) > len(prefix)+1 && subject[len(prefix)] == '.' && strings.HasPrefix(subject, prefix)
}

// plainSubject reports whether s is one or more tokens of letters, digits,
// '-' and '_', separated by single dots: no wildcard, no '$', no space.
func plainSubject(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '.':
			if s[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
