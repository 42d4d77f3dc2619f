package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
)

// jetStreamConf is the configuration file of a nats-server child process
// (--server process) for a benchmark that stores (sessions --durable):
// JetStream on, its store under dir, synced as policy says, as the embedded
// server would be.
func jetStreamConf(dir string, policy busserver.Sync) string {
	sync := "always"
	if !policy.Always() {
		sync = strconv.Quote(policy.Interval.String())
	}
	return fmt.Sprintf("jetstream {\n  store_dir: %s\n  sync_interval: %s\n}\n", strconv.Quote(filepath.Join(dir, "js")), sync)
}

// writeJetStreamConf writes jetStreamConf into dir and returns its path.
func writeJetStreamConf(dir string, policy busserver.Sync) (string, error) {
	file := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(file, []byte(jetStreamConf(dir, policy)), 0o600); err != nil {
		return "", fmt.Errorf("--server process: %w", err)
	}
	return file, nil
}

// ServerMem is the resident memory of the NATS server child process
// (--server process) at the three points the sessions benchmark measures
// its own, and its growth per idle session. The server is another process:
// no GC of it is forced, so its RSS holds whatever garbage it has not
// collected yet; the figure is an upper bound of what its state per
// session (stream subjects, consumers) costs.
type ServerMem struct {
	Before                uint64  `json:"before_rss_bytes"`
	Half                  uint64  `json:"half_rss_bytes"`
	After                 uint64  `json:"after_rss_bytes"`
	RSSPerSession         float64 `json:"rss_per_session_bytes"`
	RSSPerSessionMarginal float64 `json:"rss_per_session_marginal_bytes"`
}

// per fills in the growth per session of n sessions, the second half of
// them n2.
func (s *ServerMem) per(n, n2 int) {
	s.RSSPerSession = (float64(s.After) - float64(s.Before)) / float64(n)
	s.RSSPerSessionMarginal = (float64(s.After) - float64(s.Half)) / float64(n2)
}

// serverRSS returns the resident set size of the NATS server child process,
// and false when there is none (embedded or external).
func (m *Main) serverRSS() (uint64, bool) {
	pid := m.server.pid()
	if pid == "" {
		return 0, false
	}
	return rssOf(filepath.Join("/proc", pid, "status")), true
}

// rssOf returns VmRSS from a /proc status file, in bytes; 0 where there is
// no such file or line.
func rssOf(status string) uint64 {
	f, err := os.Open(status)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
