package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectConfig configures a client connection to NATS; the zero value
// connects to nats.DefaultURL with no credentials.
type ConnectConfig struct {
	URL  string
	Name string // connection name, shown by the server's monitoring
	// Auth: at most one of Creds, NKeySeed, User/Password, Token.
	Creds    string // JWT credentials file
	NKeySeed string // NKey seed file
	User     string
	Password string
	// PasswordFile, when set, holds the password (surrounding white space
	// ignored): a secret mounted as a file. Give it or Password, not both.
	PasswordFile string
	Token        string
	// InboxPrefix is the subject prefix of the connection's reply inboxes
	// (requests, JetStream, micro); empty: _INBOX.<User> when User is one
	// subject token, else nats.go's _INBOX (see InboxPrefix).
	InboxPrefix string
	// TLS: a CA to trust, and a client certificate with its key.
	TLSCA, TLSCert, TLSKey string
	Logger                 *slog.Logger
	// RetryFor, when positive, keeps trying the first connection for that
	// long while no server answers, instead of failing at once: a service
	// started beside its NATS server (docker compose, a pod, a supervisor
	// that starts both) waits for it rather than exiting on "no servers
	// available". Other failures (credentials, TLS) are not retried. Once
	// connected, a lost connection is always retried.
	RetryFor time.Duration
}

// Backoff of the first connection under ConnectConfig.RetryFor.
const (
	firstRetryWait = 250 * time.Millisecond
	maxRetryWait   = 5 * time.Second
)

// Connect dials NATS and keeps reconnecting, forever, when the connection
// drops; subscriptions are restored by the client library. Its errors and
// log lines show the URL with its passwords and tokens redacted.
func Connect(cfg ConnectConfig) (*nats.Conn, error) {
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	shown := RedactURL(url)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	inbox, err := InboxPrefix(cfg.InboxPrefix, cfg.User)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", shown, err)
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.CustomInboxPrefix(inbox),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "url", RedactURL(nc.ConnectedUrl())) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("NATS async error", "subject", subj, "err", redactError(err, url))
		}),
	}
	if cfg.PasswordFile != "" && cfg.User == "" {
		return nil, fmt.Errorf("nats: password file %s given without a user: give the user too (--user, $NATS_USER)", cfg.PasswordFile)
	}
	switch {
	case cfg.Creds != "":
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	case cfg.NKeySeed != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NKeySeed)
		if err != nil {
			return nil, fmt.Errorf("nats: nkey seed %s: %w", cfg.NKeySeed, err)
		}
		opts = append(opts, o)
	case cfg.User != "":
		password, err := connectPassword(cfg.Password, cfg.PasswordFile)
		if err != nil {
			return nil, fmt.Errorf("nats: user %s: %w", cfg.User, err)
		}
		opts = append(opts, nats.UserInfo(cfg.User, password))
	case cfg.Token != "":
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	// nats.RetryOnFailedConnect(true) would return a connection that is
	// not connected yet, on which the JetStream and micro set-up of the
	// commands fails at once; retrying here returns only a connected one.
	deadline := time.Now().Add(cfg.RetryFor)
	wait := firstRetryWait
	for {
		nc, err := nats.Connect(url, opts...)
		if err == nil {
			return nc, nil
		}
		err = redactError(err, url)
		if cfg.RetryFor <= 0 || !errors.Is(err, nats.ErrNoServers) {
			return nil, fmt.Errorf("%s: %w", withHint("nats: connect to "+shown, err, false), err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("%s: %w", withHint(fmt.Sprintf("nats: connect to %s: no server answered for %s", shown, cfg.RetryFor), err, true), err)
		}
		log.Warn("NATS not reachable yet, retrying", "url", shown, "err", err, "retry_in", min(wait, left).String(), "gives_up_in", left.Round(time.Second).String())
		// A backoff of the process's own, not a wait for an event: no
		// server means nothing to be told by.
		time.Sleep(min(wait, left))
		wait = min(2*wait, maxRetryWait)
	}
}

// connectPassword returns the password of a user: password, or the
// content of file without its surrounding white space.
func connectPassword(password, file string) (string, error) {
	if file == "" {
		return password, nil
	}
	if password != "" {
		return "", fmt.Errorf("both a password and a password file (%s) are given; give one", file)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("password file: %w", err)
	}
	p := strings.TrimSpace(string(data))
	if p == "" {
		return "", fmt.Errorf("password file %s is empty", file)
	}
	return p, nil
}

// Drain flushes what nc has published, drains its subscriptions, and waits
// until the connection is closed or ctx ends (which closes it at once). Call
// it last, once nothing more is published, and before the process exits:
// nats.Conn.Drain only starts the drain and returns, and a process that exits
// then loses whatever was still in the connection's buffer, such as the
// results of the calls that ended last.
func Drain(ctx context.Context, nc *nats.Conn) error {
	// Wait for CLOSED with a listener registered before the drain starts,
	// so that the event cannot come before anyone listens.
	closed := nc.StatusChanged(nats.CLOSED)
	defer nc.RemoveStatusListener(closed)
	if nc.IsReconnecting() {
		// Drain would close it at once; a flush would wait for a server
		// that may not come back.
		nc.Close()
		return fmt.Errorf("nats: drain: %w", nats.ErrConnectionReconnecting)
	}
	// The drain flushes too, but reports a failure only to the async error
	// handler; this round trip says whether the server has it all.
	var flushErr error
	if _, ok := ctx.Deadline(); ok {
		flushErr = nc.FlushWithContext(ctx)
	} else {
		flushErr = nc.Flush() // FlushWithContext insists on a deadline
	}
	if flushErr != nil {
		flushErr = fmt.Errorf("nats: flush: %w", flushErr)
	}
	if err := nc.Drain(); err != nil {
		// Closed or reconnecting (when Drain closes it): what was still
		// buffered is lost.
		nc.Close()
		return errors.Join(flushErr, fmt.Errorf("nats: drain: %w", err))
	}
	select {
	case <-closed:
	case <-ctx.Done():
		nc.Close()
		return errors.Join(flushErr, fmt.Errorf("nats: drain: %w", ctx.Err()))
	}
	if err := nc.LastError(); errors.Is(err, nats.ErrDrainTimeout) {
		return errors.Join(flushErr, fmt.Errorf("nats: drain: %w", err))
	}
	return flushErr
}
