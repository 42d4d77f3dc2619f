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
	URL                    string
	Creds, NKey            string
	User, Password, Token  string
	TLSCA, TLSCert, TLSKey string
	// ConnectRetry is how long the first connection is retried while no
	// server answers (bus.ConnectConfig.RetryFor); 0 fails at once.
	ConnectRetry time.Duration
}

// Register adds the flags to fs; defaultURL is the --nats-url default
// when NATS_URL is not set. Each credential flag defaults to its
// environment variable (NATS_URL, NATS_CREDS, NATS_NKEY, NATS_USER,
// NATS_PASSWORD, NATS_TOKEN), so that a flag given wins over the
// environment, and the environment over the built-in default.
func (f *NATSFlags) Register(fs *flag.FlagSet, defaultURL string) {
	fs.StringVar(&f.URL, "nats-url", env("NATS_URL", defaultURL), "NATS server URL(s), comma-separated ($NATS_URL)")
	fs.StringVar(&f.Creds, "creds", env("NATS_CREDS", ""), "NATS JWT credentials file ($NATS_CREDS)")
	fs.StringVar(&f.NKey, "nkey", env("NATS_NKEY", ""), "NATS NKey seed file ($NATS_NKEY)")
	fs.StringVar(&f.User, "user", env("NATS_USER", ""), "NATS user ($NATS_USER)")
	fs.StringVar(&f.Password, "password", env("NATS_PASSWORD", ""), "NATS password ($NATS_PASSWORD)")
	fs.StringVar(&f.Token, "token", env("NATS_TOKEN", ""), "NATS token ($NATS_TOKEN)")
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
	}
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
