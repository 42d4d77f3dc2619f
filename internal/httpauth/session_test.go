package httpauth

import (
	"encoding/base64"
	"testing"
	"time"
)

func mustDecode(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func encode(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func TestSessionsLogoutRevokes(t *testing.T) {
	now := time.Now()
	s := newSessions(time.Hour, writerTok, viewerTok)
	c := s.issue(Writer, now)
	if role, _, err := s.check(c, now); err != nil || role != Writer {
		t.Fatalf("check = %v, %v", role, err)
	}
	if c2 := s.issue(Writer, now); c2 == c {
		t.Fatal("two logins got the same cookie")
	}
	s.revoke(c, now)
	if _, _, err := s.check(c, now); err == nil || !contains(err.Error(), "logged out") {
		t.Fatalf("a cookie logged out: err = %v", err)
	}
	// Another process with the same tokens accepts a cookie of this one.
	if _, _, err := newSessions(time.Hour, writerTok, viewerTok).check(s.issue(Viewer, now), now); err != nil {
		t.Fatalf("another process with the same tokens: %v", err)
	}
}
