package bus

import (
	"errors"
	"strings"

	"github.com/nats-io/nats.go"
)

// connectHint says what to do about a failed first connection, as a
// parenthesis for its error; "" when there is nothing to suggest. retry is
// the --connect-retry in force.
func connectHint(err error, retry bool) string {
	switch {
	case errors.Is(err, nats.ErrNoServers) && retry:
		return "check the URL and that the server runs, or wait longer with --connect-retry"
	case errors.Is(err, nats.ErrNoServers):
		return "check the URL and that the server runs; to wait for a server that is starting, give --connect-retry 2m"
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired):
		return "check the credentials: --user with --password-file (or $NATS_USER, $NATS_PASSWORD_FILE), --token, --creds or --nkey"
	case errors.Is(err, nats.ErrSecureConnRequired), errors.Is(err, nats.ErrSecureConnWanted),
		strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "check TLS: --tls-ca for the server's certificate authority, --tls-cert and --tls-key for a client certificate, or a tls:// URL"
	}
	return ""
}

// withHint appends connectHint's suggestion to msg.
func withHint(msg string, err error, retry bool) string {
	if h := connectHint(err, retry); h != "" {
		return msg + " (" + h + ")"
	}
	return msg
}
