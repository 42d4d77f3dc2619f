package delegate

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/agentfleet/agentfleet"
)

// ChildSession returns the session a call of an ask tool runs in when the
// model names none: derived from the parent's agent, session, run and tool
// call id, so that the call run again after its owner died (the same run,
// resumed elsewhere) reaches the same child session. It is a valid session
// token: "d-" and 24 hex digits.
func ChildSession(p *agentfleet.Parent) string {
	return "d-" + digest("session", p)[:24]
}

// IsChildSession reports whether session has the form of ChildSession's:
// "d-" and 24 lowercase hex digits.
func IsChildSession(session string) bool {
	if len(session) != 26 || session[:2] != "d-" {
		return false
	}
	for i := 2; i < len(session); i++ {
		if c := session[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// MsgID returns the message id of the ask of a call: the Nats-Msg-Id that
// the child session de-duplicates on, so that the call run again is
// answered from the child's stored history (or waits for its run) instead
// of running the child twice.
func MsgID(p *agentfleet.Parent) string {
	return "delegate-" + digest("msg", p)[:32]
}

// digest hashes the call's coordinates under a domain; each is
// length-prefixed, so that no two different calls give the same input.
func digest(domain string, p *agentfleet.Parent) string {
	h := sha256.New()
	for _, s := range []string{domain, p.Agent, p.Session, p.RunID, p.ToolCallID} {
		var n [4]byte
		l := len(s)
		n[0], n[1], n[2], n[3] = byte(l>>24), byte(l>>16), byte(l>>8), byte(l)
		h.Write(n[:])
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}
