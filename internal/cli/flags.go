// Package cli holds the flags that every command shares: the NATS
// connection with its credentials, and logging.
package cli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// NATSFlags are the NATS client options operators use.
type NATSFlags struct {
	URL                   string
	Creds, NKey           string
	User, Password, Token string
	// PasswordFile holds the password, for secrets mounted as files.
	PasswordFile string
	// InboxPrefix is the prefix of the connection's reply inboxes (empty:
	// _INBOX.<user>, see bus.InboxPrefix).
	InboxPrefix            string
	TLSCA, TLSCert, TLSKey string
	// ConnectRetry is how long the first connection is retried while no
	// server answers (bus.ConnectConfig.RetryFor); 0 fails at once.
	ConnectRetry time.Duration
}

// Register adds the flags to fs; defaultURL is the --nats-url default
// when NATS_URL is not set. Each credential flag defaults to its
// environment variable (NATS_URL, NATS_CREDS, NATS_NKEY, NATS_USER,
// NATS_PASSWORD, NATS_PASSWORD_FILE, NATS_TOKEN, NATS_INBOX_PREFIX), so
// that a flag given wins over the environment, and the environment over
// the built-in default. The usage text never shows a password or token of
// the environment: not as the default of --password or --token, nor inside
// the default of --nats-url.
func (f *NATSFlags) Register(fs *flag.FlagSet, defaultURL string) {
	f.URL = env("NATS_URL", defaultURL)
	fs.Var(redactedValue{&f.URL}, "nats-url", "NATS server URL(s), comma-separated ($NATS_URL)")
	fs.StringVar(&f.Creds, "creds", env("NATS_CREDS", ""), "NATS JWT credentials file ($NATS_CREDS)")
	fs.StringVar(&f.NKey, "nkey", env("NATS_NKEY", ""), "NATS NKey seed file ($NATS_NKEY)")
	fs.StringVar(&f.User, "user", env("NATS_USER", ""), "NATS user ($NATS_USER)")
	f.Password = env("NATS_PASSWORD", "")
	fs.Var(secretValue{&f.Password}, "password", "NATS password ($NATS_PASSWORD); prefer --password-file, which keeps it off the command line")
	fs.StringVar(&f.PasswordFile, "password-file", env("NATS_PASSWORD_FILE", ""), "file holding the NATS password, such as a mounted secret; surrounding white space is ignored ($NATS_PASSWORD_FILE)")
	f.Token = env("NATS_TOKEN", "")
	fs.Var(secretValue{&f.Token}, "token", "NATS token ($NATS_TOKEN)")
	fs.StringVar(&f.InboxPrefix, "inbox-prefix", env("NATS_INBOX_PREFIX", ""), "subject prefix of this connection's reply inboxes, _INBOX or under _INBOX. (default _INBOX.<user> with --user, else _INBOX); deploy/nats/nats.conf lets each user read only its own ($NATS_INBOX_PREFIX)")
	fs.StringVar(&f.TLSCA, "tls-ca", "", "CA certificate file to verify the NATS server")
	fs.StringVar(&f.TLSCert, "tls-cert", "", "client certificate file for NATS TLS")
	fs.StringVar(&f.TLSKey, "tls-key", "", "client key file for NATS TLS")
	fs.DurationVar(&f.ConnectRetry, "connect-retry", 0, "how long to keep trying the first connection while no NATS server answers, such as 2m for a service started beside its server (default 0: fail at once)")
}

// NATSFromEnv returns the NATS options of the environment, as Register's
// defaults are: for programs that set their flags' values before
// registering them.
func NATSFromEnv(defaultURL string) NATSFlags {
	return NATSFlags{
		URL: env("NATS_URL", defaultURL), Creds: env("NATS_CREDS", ""), NKey: env("NATS_NKEY", ""),
		User: env("NATS_USER", ""), Password: env("NATS_PASSWORD", ""), Token: env("NATS_TOKEN", ""),
		PasswordFile: env("NATS_PASSWORD_FILE", ""), InboxPrefix: env("NATS_INBOX_PREFIX", ""),
	}
}

// secretValue is a string flag whose value is never shown: the usage text
// prints a flag's default, which may come from the environment.
type secretValue struct{ p *string }

func (v secretValue) String() string { return "" }
func (v secretValue) Set(s string) error {
	*v.p = s
	return nil
}

// redactedValue is a string flag holding NATS URLs, shown with their
// passwords and tokens redacted.
type redactedValue struct{ p *string }

func (v redactedValue) String() string {
	if v.p == nil {
		return ""
	}
	return bus.RedactURL(*v.p)
}
func (v redactedValue) Set(s string) error {
	*v.p = s
	return nil
}

// env returns the environment variable name when it is set and not empty,
// else def.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Config returns the connection configuration for a client named name.
func (f *NATSFlags) Config(name string, log *slog.Logger) bus.ConnectConfig {
	return bus.ConnectConfig{
		URL: f.URL, Name: name, Creds: f.Creds, NKeySeed: f.NKey, User: f.User, Password: f.Password,
		PasswordFile: f.PasswordFile, InboxPrefix: f.InboxPrefix, Token: f.Token, TLSCA: f.TLSCA, TLSCert: f.TLSCert, TLSKey: f.TLSKey, Logger: log,
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

// FlagSource names where the value of the flag name on the parsed fs came
// from, for an error about the value: "--name" when the command line gave
// it, else "$envName (the default of --name)" when that environment
// variable is set, since the flag's default came from it.
func FlagSource(fs *flag.FlagSet, name, envName string) string {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if !given && os.Getenv(envName) != "" {
		return "$" + envName + " (the default of --" + name + ")"
	}
	return "--" + name
}
