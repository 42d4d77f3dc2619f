package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbeddedConfig configures an in-process NATS server.
type EmbeddedConfig struct {
	// Listen is host:port; default "127.0.0.1:4222". Port -1 or 0 picks a
	// free port.
	Listen string
	// DataDir holds JetStream's data; default "./data". Empty with
	// NoJetStream leaves JetStream off.
	DataDir string
	// NoJetStream turns JetStream off (tests that do not need it).
	NoJetStream bool
	// ConfigFile, if set, is a nats-server configuration file whose settings
	// (users, permissions, TLS) apply; Listen and DataDir still override the
	// address and the store directory.
	ConfigFile string
	// Logs turns on the server's own log lines.
	Logs bool
	// Sync is when JetStream syncs its store to disk; default SyncAlways
	// (fsync before every acknowledgement). It overrides a sync_interval of
	// ConfigFile, as Listen and DataDir override theirs.
	Sync Sync
}

// ErrListen is returned when the embedded server cannot take its address.
var ErrListen = errors.New("embedded NATS server cannot listen")

// RunEmbedded starts a NATS server in the process and waits until it takes
// clients. When the address is taken, the error wraps ErrListen; when the
// data directory cannot be written, ErrDataDir; when another server stores
// in it, ErrDataDirInUse. The data directory stays locked until the server
// has shut down.
func RunEmbedded(cfg EmbeddedConfig) (*server.Server, error) {
	opts := &server.Options{}
	if cfg.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(cfg.ConfigFile); err != nil {
			return nil, fmt.Errorf("embedded NATS server: config file %s: %w", cfg.ConfigFile, err)
		}
	}
	listen := cfg.Listen
	if listen == "" {
		listen = "127.0.0.1:4222"
	}
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: address %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: port %q is not a number", portStr)
	}
	if port == 0 {
		port = -1
	}
	opts.Host, opts.Port = host, port
	opts.NoSigs = true
	opts.NoLog = !cfg.Logs
	if !cfg.NoJetStream {
		opts.JetStream = true
		opts.StoreDir = cfg.DataDir
		if opts.StoreDir == "" {
			opts.StoreDir = "./data"
		}
		cfg.Sync.apply(opts)
	}
	if port > 0 {
		// The server logs a failed listen and exits; check first so that the
		// caller gets an error it can show.
		l, err := net.Listen("tcp", listen)
		if err != nil {
			return nil, fmt.Errorf("%w on %s: %v", ErrListen, listen, err)
		}
		l.Close()
	}
	if opts.JetStream {
		// Checked before the server starts: it would otherwise fail in
		// the background and only time out below.
		if opts.StoreDir, err = lockDataDir(opts.StoreDir); err != nil {
			return nil, fmt.Errorf("embedded NATS server: %w", err)
		}
	}
	s, err := server.NewServer(opts)
	if err != nil {
		if opts.JetStream {
			releaseDataDir(opts.StoreDir, nil)
		}
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	if opts.JetStream {
		bindDataDir(opts.StoreDir, s)
	}
	if cfg.Logs {
		s.ConfigureLogger()
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("%w on %s: not ready after 10s", ErrListen, listen)
	}
	return s, nil
}
