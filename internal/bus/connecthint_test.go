package bus

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestConnectHint(t *testing.T) {
	for _, tt := range []struct {
		name  string
		err   error
		retry bool
		want  string
	}{
		{"no server", nats.ErrNoServers, false, "give --connect-retry 2m"},
		{"no server after retrying", nats.ErrNoServers, true, "wait longer with --connect-retry"},
		{"wrapped", fmt.Errorf("dial: %w", nats.ErrNoServers), false, "--connect-retry"},
		{"bad password", nats.ErrAuthorization, false, "--password-file"},
		{"tls wanted", nats.ErrSecureConnRequired, false, "--tls-ca"},
		{"bad certificate", errors.New("tls: failed to verify certificate: x509: unknown authority"), false, "--tls-ca"},
		{"other", errors.New("nats: invalid connection"), false, ""},
	} {
		got := connectHint(tt.err, tt.retry)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%s: hint %q, want one with %q", tt.name, got, tt.want)
		}
	}
}

// TestConnectDeadPortNamesTheFix connects to a port where no server
// listens: the error says so and suggests --connect-retry.
func TestConnectDeadPortNamesTheFix(t *testing.T) {
	_, err := Connect(ConnectConfig{URL: "nats://127.0.0.1:1", Name: t.Name()})
	if err == nil || !errors.Is(err, nats.ErrNoServers) || !strings.Contains(err.Error(), "--connect-retry 2m") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("err = %v, want no servers at 127.0.0.1:1 with a hint of --connect-retry", err)
	}
}
