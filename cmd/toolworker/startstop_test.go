package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
)

// slowListServer is a hostile MCP server over streamable HTTP: it
// initializes as any server does, then answers tools/list with a schema
// that never ends, a kilobyte every 20 ms. listing is told when
// tools/list came, gone when its connection closed.
func slowListServer(t *testing.T) (url string, listing, gone chan struct{}) {
	t.Helper()
	listing, gone = make(chan struct{}, 1), make(chan struct{}, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"slow","version":"1"}}}`, req.ID, req.Params.ProtocolVersion)
		case "tools/list":
			listing <- struct{}{}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"slow","inputSchema":{"type":"object","description":"`, req.ID)
			chunk := bytes.Repeat([]byte("s"), 1024)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-r.Context().Done():
					gone <- struct{}{}
					return
				case <-tick.C:
					w.Write(chunk)
					w.(http.Flusher).Flush()
				}
			}
		default:
			if len(req.ID) == 0 { // a notification
				w.WriteHeader(http.StatusAccepted)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL, listing, gone
}

// TestSIGTERMDuringMCPListing starts the toolworker program on an MCP
// server that lists its tools endlessly slowly, and sends SIGTERM while
// it lists: the process stops within seconds, saying it stopped during
// start-up and where, and the MCP request is given up.
func TestSIGTERMDuringMCPListing(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	url, listing, gone := slowListServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOOLWORKER_CHILD_ARGS=--nats-url "+srv.ClientURL()+" --mcp slow="+url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-listing:
	case err := <-exited:
		t.Fatalf("the worker exited before listing the server's tools: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker did not list the server's tools:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	var err error
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the worker still runs 10s after SIGTERM during the MCP listing:\n%s", stderr.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1 with the reason", err)
	}
	if want := "toolworker: stopped during start-up: mcp server slow: tools/list: "; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr = %q, want it to contain %q", stderr.String(), want)
	}
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Error("the MCP server still streams the listing to a stopped worker")
	}
}
