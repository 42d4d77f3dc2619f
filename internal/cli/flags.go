// Package cli holds the flags that every command shares: the NATS
// connection with its credentials, and logging.
package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// NATSFlags are the NATS client options operators use.
type NATSFlags struct {
	URL                    string
	Creds, NKey            string
	User, Password, Token  string
	TLSCA, TLSCert, TLSKey string
	// ConnectRetry is how long the first connection is retried while no
	// server answers (bus.ConnectConfig.RetryFor); 0 fails at once.
	ConnectRetry time.Duration
}

// Register adds the flags to fs; defaultURL is the --nats-url default.
func (f *NATSFlags) Register(fs *flag.FlagSet, defaultURL string) {
	fs.StringVar(&f.URL, "nats-url", defaultURL, "NATS server URL(s), comma-separated")
	fs.StringVar(&f.Creds, "creds", "", "NATS JWT credentials file")
	fs.StringVar(&f.NKey, "nkey", "", "NATS NKey seed file")
	fs.StringVar(&f.User, "user", "", "NATS user")
	fs.StringVar(&f.Password, "password", "", "NATS password")
	fs.StringVar(&f.Token, "token", "", "NATS token")
	fs.StringVar(&f.TLSCA, "tls-ca", "", "CA certificate file to verify the NATS server")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "client certificate file for NATS TLS")
	fs.StringVar(&f.TLSKey, "tls-key", "", "client key file for NATS TLS")
	fs.DurationVar(&f.ConnectRetry, "connect-retry", 0, "how long to keep trying the first connection while no NATS server answers, such as 2m for a service started beside its server (default 0: fail at once)")
}

// Config returns the connection configuration for a client named name.
func (f *NATSFlags) Config(name string, log *slog.Logger) bus.ConnectConfig {
	return bus.ConnectConfig{
		URL: f.URL, Name: name, Creds: f.Creds, NKeySeed: f.NKey, User: f.User, Password: f.Password,
		Token: f.Token, TLSCA: f.TLSCA, TLSCert: f.TLSCert, TLSKey: f.TLSKey, Logger: log,
		RetryFor: f.ConnectRetry,
	}
}

// LogFlags choose the log format and level.
type LogFlags struct {
	Format, Level string
}

// Register adds --log-format and --log-level to fs.
func (f *LogFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Format, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.Level, "log-level", "info", "log level: debug, info, warn or error")
}

// Logger returns a logger writing to w; the error names the bad flag value.
func (f *LogFlags) Logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(f.Format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", f.Format)
	}
}
