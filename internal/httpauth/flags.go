package httpauth

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// Flags are the command-line flags of a guarded listener, shared by the
// orchestrator's --http and agentctl dashboard.
type Flags struct {
	TokenFile, ViewerTokenFile string
	AllowedHosts               string
	ProxyUserHeader            string
	ProxyWriters               string
	Insecure                   bool
	MetricsAuth                bool
	MaxBody                    int64
	BodyTimeout                time.Duration
	fs                         *flag.FlagSet
}

// FlagNames are the names of the flags Register adds (without
// --metrics-auth, which only a listener with /metrics has).
var FlagNames = []string{"http-token-file", "http-viewer-token-file", "http-allowed-hosts", "insecure-http", "http-max-body", "http-body-timeout", "http-proxy-user-header", "http-proxy-writers"}

// Register adds the flags to fs; metrics adds --metrics-auth too. The
// token files and the allowed hosts default to their environment
// variables: AGENTFLEET_HTTP_TOKEN_FILE, AGENTFLEET_HTTP_VIEWER_TOKEN_FILE,
// AGENTFLEET_HTTP_ALLOWED_HOSTS.
func (f *Flags) Register(fs *flag.FlagSet, metrics bool) {
	f.fs = fs
	fs.StringVar(&f.TokenFile, "http-token-file", os.Getenv("AGENTFLEET_HTTP_TOKEN_FILE"), "file holding the writer token of --http (watch, send, approve, abort, /mcp), as Authorization: Bearer or through the login page; required off loopback (default $AGENTFLEET_HTTP_TOKEN_FILE)")
	fs.StringVar(&f.ViewerTokenFile, "http-viewer-token-file", os.Getenv("AGENTFLEET_HTTP_VIEWER_TOKEN_FILE"), "file holding the viewer token of --http: watch only (default $AGENTFLEET_HTTP_VIEWER_TOKEN_FILE)")
	fs.StringVar(&f.AllowedHosts, "http-allowed-hosts", os.Getenv("AGENTFLEET_HTTP_ALLOWED_HOSTS"), "comma-separated names (with an optional :port) a request's Host may give besides localhost, the --http host and IP addresses; * allows any (default $AGENTFLEET_HTTP_ALLOWED_HOSTS)")
	fs.StringVar(&f.ProxyUserHeader, "http-proxy-user-header", "", "trust this header (such as X-Forwarded-User) of an authenticating proxy in front to name the user: a viewer, or a writer when in --http-proxy-writers; only the proxy may then reach --http")
	fs.StringVar(&f.ProxyWriters, "http-proxy-writers", "", "comma-separated users of --http-proxy-user-header given the writer role")
	fs.BoolVar(&f.Insecure, "insecure-http", false, "serve --http on a non-loopback address without any credential (anyone who reaches it may act on the fleet)")
	fs.Int64Var(&f.MaxBody, "http-max-body", DefaultMaxBody, "bound of a request body on --http, in bytes")
	fs.DurationVar(&f.BodyTimeout, "http-body-timeout", DefaultBodyTimeout, "bound of the reading of a request body on --http")
	if metrics {
		fs.BoolVar(&f.MetricsAuth, "metrics-auth", false, "make /metrics of --http need the viewer (or writer) token, as Authorization: Bearer")
	}
}

// Guard reads the token files and returns the guard of the listener that
// listenFlag (such as "--http") gives on listen. It refuses a non-loopback
// address without a credential unless --insecure-http, and then warns;
// covered says that what the listener serves needs no more credentials
// (no dashboard, and /mcp has --mcp-token or is not served). mcpToken is
// --mcp-token, "" without.
func (f *Flags) Guard(listenFlag, listen, mcpToken string, covered bool, log *slog.Logger) (*Guard, error) {
	cfg := Config{MCPToken: mcpToken, MetricsAuth: f.MetricsAuth, MaxBody: f.MaxBody, BodyTimeout: f.BodyTimeout, Logger: log,
		ProxyUserHeader: f.ProxyUserHeader, ProxyWriters: ParseList(f.ProxyWriters)}
	if f.ProxyWriters != "" && f.ProxyUserHeader == "" {
		return nil, fmt.Errorf("--http-proxy-writers needs --http-proxy-user-header, the header that names the user")
	}
	var err error
	if f.TokenFile != "" {
		if cfg.WriterToken, err = ReadToken(f.source("http-token-file", "AGENTFLEET_HTTP_TOKEN_FILE"), f.TokenFile); err != nil {
			return nil, err
		}
	}
	if f.ViewerTokenFile != "" {
		if cfg.ViewerToken, err = ReadToken(f.source("http-viewer-token-file", "AGENTFLEET_HTTP_VIEWER_TOKEN_FILE"), f.ViewerTokenFile); err != nil {
			return nil, err
		}
		if cfg.ViewerToken == cfg.WriterToken {
			return nil, fmt.Errorf("--http-viewer-token-file %s holds the writer's token: give the viewer a token of its own", f.ViewerTokenFile)
		}
	}
	if cfg.Hosts, err = NewHosts(listen, ParseList(f.AllowedHosts)); err != nil {
		return nil, fmt.Errorf("%s: %w", f.source("http-allowed-hosts", "AGENTFLEET_HTTP_ALLOWED_HOSTS"), err)
	}
	if f.MetricsAuth && cfg.WriterToken == "" && cfg.ViewerToken == "" && cfg.ProxyUserHeader == "" {
		return nil, fmt.Errorf("--metrics-auth needs a credential for /metrics: give --http-viewer-token-file or --http-token-file")
	}
	protected := cfg.WriterToken != "" || cfg.ViewerToken != "" || cfg.ProxyUserHeader != ""
	if cfg.ProxyUserHeader != "" {
		log.Info("--http trusts the proxy's user header: only the proxy may reach it, since anyone else could set the header", "header", cfg.ProxyUserHeader, "writers", cfg.ProxyWriters)
	}
	if err := CheckExposure(listenFlag, listen, protected || covered, f.Insecure); err != nil {
		return nil, err
	}
	if !protected && !covered && !Loopback(listen) {
		log.Warn("--insecure-http: serving without credentials on a non-loopback address; anyone who reaches it may send, approve, abort and run tools", "http", listen)
	}
	return New(cfg), nil
}

func (f *Flags) source(name, env string) string {
	if f.fs == nil {
		return "--" + name
	}
	given := false
	f.fs.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	if !given && os.Getenv(env) != "" {
		return "$" + env + " (the default of --" + name + ")"
	}
	return "--" + name
}
