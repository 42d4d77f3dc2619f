package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/nats-io/nats.go"
)

// Where the benchmarks' NATS server runs (--server).
const (
	// serverEmbedded runs the server inside fleetbench, sharing its garbage
	// collector and scheduler with the client side of every measurement.
	serverEmbedded = "embedded"
	// serverExternal uses the server named by --nats-url.
	serverExternal = "external"
	// serverProcess builds nats-server and runs it as a child process.
	serverProcess = "process"
)

// checkServer resolves --server against --nats-url: with neither the
// server is embedded, with --nats-url alone it is external.
func (m *Main) checkServer() error {
	switch m.Server {
	case "":
		m.Server = serverEmbedded
		if m.NATSURL != "" {
			m.Server = serverExternal
		}
	case serverExternal:
		if m.NATSURL == "" {
			return errors.New("--server external: --nats-url is required")
		}
	case serverEmbedded, serverProcess:
		if m.NATSURL != "" {
			return fmt.Errorf("--server %s: --nats-url is only for --server external", m.Server)
		}
	default:
		return fmt.Errorf("--server %q: not one of embedded, external, process", m.Server)
	}
	if m.ServerCPUs != "" {
		if m.Server != serverProcess {
			return fmt.Errorf("--server-cpus is only for --server process, not %s", m.Server)
		}
		var err error
		if m.cpus.server, m.cpus.rest, err = splitCPUs(m.ServerCPUs); err != nil {
			return err
		}
		m.cpus.on = true
	}
	return nil
}

// startNATS starts the server that --server asks for, or takes the one
// --nats-url names.
func (m *Main) startNATS(ctx context.Context) error {
	switch m.Server {
	case serverExternal:
		m.url = m.NATSURL
		return nil
	case serverProcess:
		return m.startServerProcess(ctx)
	}
	cfg := busserver.EmbeddedConfig{Listen: "127.0.0.1:0", NoJetStream: true, Sync: m.Sync}
	if m.Command == cmdSessions && m.Sessions.Durable {
		// The durable round stores input and history: JetStream on, in a
		// directory of the run's own.
		dir, err := os.MkdirTemp("", "fleetbench-js-")
		if err != nil {
			return err
		}
		m.jsDir, cfg.DataDir, cfg.NoJetStream = dir, dir, false
	}
	s, err := busserver.RunEmbedded(cfg)
	if err != nil {
		return err
	}
	m.embedded, m.url = s, s.ClientURL()
	return nil
}

// serverProc is a nats-server child process and the directory of its
// binary.
type serverProc struct {
	dir  string
	cmd  *exec.Cmd
	log  bytes.Buffer // its log, shown if it fails to start
	done chan error
}

// startServerProcess builds nats-server from the module's dependency into a
// temporary directory, starts it on a free loopback port with JetStream off
// (on for sessions --durable), and waits until it accepts clients.
func (m *Main) startServerProcess(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "fleetbench-nats-")
	if err != nil {
		return err
	}
	p := &serverProc{dir: dir}
	m.server = p
	build := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "github.com/nats-io/nats-server/v2")
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		return fmt.Errorf("--server process: go build nats-server (run inside the agentfleet module): %w\n%s", err, out.String())
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port)}
	if m.Command == cmdSessions && m.Sessions.Durable {
		// The durable round stores input and history: JetStream on, in
		// the binary's directory, synced as --sync says.
		conf, err := writeJetStreamConf(dir, m.Sync)
		if err != nil {
			return err
		}
		args = append(args, "-c", conf)
	}
	p.cmd = exec.Command(filepath.Join(dir, "nats-server"), args...)
	if m.cpus.on {
		// As many Ps as its CPUs; its threads are pinned once it is up.
		p.cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(m.cpus.server.Count()))
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.log, &p.log
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting nats-server: %w", err)
	}
	p.done = make(chan error, 1)
	go func() { p.done <- p.cmd.Wait() }()
	m.url = "nats://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(readyTimeout)
	for {
		nc, err := nats.Connect(m.url)
		if err == nil {
			nc.Close()
			if m.cpus.on {
				return pinProcess(p.cmd.Process.Pid, &m.cpus.server)
			}
			return nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("nats-server exited before it was ready: %v\n%s", err, p.log.String())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nats-server not ready after %v: %w", readyTimeout, err)
		}
	}
}

// pid is the server process's id for the CPU meter; empty if there is none.
func (p *serverProc) pid() string {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(p.cmd.Process.Pid)
}

// stop ends the server process and removes its binary.
func (p *serverProc) stop() error {
	if p.done != nil {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	return os.RemoveAll(p.dir)
}

// freePort returns a loopback TCP port that is free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// serverCPU is the CPU time the NATS server child process has used so far,
// and whether there is one to measure: an embedded server's CPU counts in
// this process's, an external one's is not seen.
func (m *Main) serverCPU() (time.Duration, bool) {
	pid := m.server.pid()
	if pid == "" {
		return 0, false
	}
	return processCPU(pid), true
}
