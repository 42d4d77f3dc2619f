package bus

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://alice:s3cret@nats:4222", "nats://alice:xxxxx@nats:4222"},
		{"nats://s3cr3t-token@nats:4222", "nats://xxxxx@nats:4222"},
		{"tls://alice:p%40ss@nats:4222", "tls://alice:xxxxx@nats:4222"},
		{"ws://alice:s3cret@nats:8080/path", "ws://alice:xxxxx@nats:8080/path"},
		{"nats://alice:s3cret@a:4222, nats://alice:s3cret@b:4222,nats://c:4222", "nats://alice:xxxxx@a:4222, nats://alice:xxxxx@b:4222,nats://c:4222"},
		{"alice:s3cret@nats:4222", "xxxxx@nats:4222"},
		// Unparsable ones lose their credentials all the same.
		{"nats://alice:s3cret@nats:port", "nats://xxxxx@nats:port"},
		{"nats://alice:s3%zzcret@nats:4222", "nats://xxxxx@nats:4222"},
		{"nats://al@ice:s3cret@nats:4222", "nats://al%40ice:xxxxx@nats:4222"},
	}
	for _, tt := range tests {
		got := RedactURL(tt.in)
		if got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
		for _, secret := range []string{"s3cret", "s3cr3t-token", "p%40ss", "p@ss", "s3%zzcret"} {
			if strings.Contains(got, secret) {
				t.Errorf("RedactURL(%q) = %q still holds %q", tt.in, got, secret)
			}
		}
	}
}

func TestRedactError(t *testing.T) {
	raw := "nats://alice:s3cret@nats:port"
	_, perr := url.Parse(raw)
	if !strings.Contains(perr.Error(), "s3cret") {
		t.Fatalf("the parse error does not quote the password (%v); the test proves nothing", perr)
	}
	err := redactError(perr, raw)
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "nats://alice:xxxxx@nats:port") {
		t.Errorf("redacted error = %q", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Error("the redacted error does not unwrap to the original")
	}
	plain := errors.New("nats: no servers available for connection")
	if got := redactError(plain, raw); got != plain {
		t.Errorf("an error without secrets was rewrapped: %v", got)
	}
}
