package httpauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CookieName is the name of the login session cookie.
const CookieName = "agentfleet_session"

// DefaultSessionTTL is how long a login lasts.
const DefaultSessionTTL = 12 * time.Hour

// sessions signs and checks session cookies. A cookie holds its role, its
// expiry and a random id, signed with HMAC-SHA256 under a key derived from
// the configured tokens: every orchestrator given the same token files
// accepts it, a cookie cannot be forged or have its role raised without
// the key, and replacing a token ends every session. Logging out revokes
// the cookie's id in this process until it expires.
type sessions struct {
	key []byte
	ttl time.Duration

	mu      sync.Mutex
	revoked map[string]time.Time // id → expiry
}

// maxRevoked bounds the ids revoked: past it, the expired ones go first,
// then the oldest.
const maxRevoked = 10000

func newSessions(ttl time.Duration, tokens ...string) *sessions {
	m := hmac.New(sha256.New, []byte("agentfleet http session key v1"))
	for _, t := range tokens {
		m.Write([]byte(t))
		m.Write([]byte{0})
	}
	return &sessions{key: m.Sum(nil), ttl: ttl, revoked: map[string]time.Time{}}
}

// issue returns a new cookie value for role, valid until now+ttl.
func (s *sessions) issue(role Role, now time.Time) string {
	var id [16]byte
	rand.Read(id[:])
	payload := fmt.Sprintf("v1|%s|%d|%s", role, now.Add(s.ttl).Unix(), hex.EncodeToString(id[:]))
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + base64.RawURLEncoding.EncodeToString(s.mac(payload))
}

func (s *sessions) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// check returns the role of a cookie value, or why it is not valid.
func (s *sessions) check(value string, now time.Time) (Role, string, error) {
	p64, m64, ok := strings.Cut(value, ".")
	if !ok {
		return Anonymous, "", fmt.Errorf("session cookie is not a signed value")
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if err1 != nil || err2 != nil || !hmac.Equal(mac, s.mac(string(payload))) {
		return Anonymous, "", fmt.Errorf("session cookie's signature is not this server's (forged, or signed with a token since replaced)")
	}
	f := strings.Split(string(payload), "|")
	if len(f) != 4 || f[0] != "v1" {
		return Anonymous, "", fmt.Errorf("session cookie's content is not a session")
	}
	exp, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return Anonymous, "", fmt.Errorf("session cookie's expiry is not a time")
	}
	if !now.Before(time.Unix(exp, 0)) {
		return Anonymous, "", fmt.Errorf("session expired at %s", time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	s.mu.Lock()
	_, gone := s.revoked[f[3]]
	s.mu.Unlock()
	if gone {
		return Anonymous, "", fmt.Errorf("session was logged out")
	}
	switch f[1] {
	case "viewer":
		return Viewer, f[3], nil
	case "writer":
		return Writer, f[3], nil
	}
	return Anonymous, "", fmt.Errorf("session cookie's role %q is not one", f[1])
}

// revoke ends the session of a valid cookie value in this process.
func (s *sessions) revoke(value string, now time.Time) {
	if _, id, err := s.check(value, now); err == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.revoked) >= maxRevoked {
			for k, exp := range s.revoked {
				if !now.Before(exp) || len(s.revoked) >= maxRevoked {
					delete(s.revoked, k)
				}
			}
		}
		s.revoked[id] = now.Add(s.ttl)
	}
}
