package bus

import (
	"fmt"
	"log/slog"
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
	Token    string
	// TLS: a CA to trust, and a client certificate with its key.
	TLSCA, TLSCert, TLSKey string
	Logger                 *slog.Logger
}

// Connect dials NATS and keeps reconnecting, forever, when the connection
// drops; subscriptions are restored by the client library.
func Connect(cfg ConnectConfig) (*nats.Conn, error) {
	url := cfg.URL
	if url == "" {
		url = nats.DefaultURL
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	opts := []nats.Option{
		nats.Name(cfg.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("NATS async error", "subject", subj, "err", err)
		}),
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
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	case cfg.Token != "":
		opts = append(opts, nats.Token(cfg.Token))
	}
	if cfg.TLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCA))
	}
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", url, err)
	}
	return nc, nil
}
