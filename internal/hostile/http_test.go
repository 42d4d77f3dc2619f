package hostile_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const (
	writerToken = "writer-token-0123456789abcdef"
	viewerToken = "viewer-token-0123456789abcdef"
)

// TestHTTPAttacks runs the orchestrator process with its listener guarded
// by a writer and a viewer token, and attacks it as the attackers
// did: an anonymous POST /mcp that writes a fleet-wide scripted tool, a
// page rebound to 127.0.0.1 under another name, a viewer who acts. Each is
// refused, nothing is stored, and the writer is still served.
func TestHTTPAttacks(t *testing.T) {
	dir := t.TempDir()
	writerFile, viewerFile := filepath.Join(dir, "writer"), filepath.Join(dir, "viewer")
	os.WriteFile(writerFile, []byte(writerToken+"\n"), 0o600)
	os.WriteFile(viewerFile, []byte(viewerToken+"\n"), 0o600)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	f := startFleet(t, "--http", addr, "--http-token-file", writerFile, "--http-viewer-token-file", viewerFile)
	base := "http://" + addr
	waitHTTP(t, base+"/") // the dashboard is served once it has opened

	writeTool := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_tool","arguments":{"definition":{"name":"pwned","description":"d","code":"def execute(args):\n    return 'x'\n"}}}}`
	cases := []struct {
		name, method, path, body, bearer, host string
		want                                   int
	}{
		{"anonymous MCP write_tool", "POST", "/mcp", writeTool, "", "", http.StatusUnauthorized},
		{"MCP write_tool with a wrong token", "POST", "/mcp", writeTool, "not-the-token-0123456789", "", http.StatusUnauthorized},
		{"MCP write_tool as a viewer", "POST", "/mcp", writeTool, viewerToken, "", http.StatusForbidden},
		{"MCP write_tool rebound to 127.0.0.1", "POST", "/mcp", writeTool, writerToken, "evil.example", http.StatusForbidden},
		{"anonymous approval", "POST", "/api/approve", `{"agent":"default","session":"victim","tool_call_id":"call_1","approve":true}`, "", "", http.StatusUnauthorized},
		{"approval rebound to 127.0.0.1", "POST", "/api/approve", `{"agent":"default","session":"victim","tool_call_id":"call_1","approve":true}`, writerToken, "evil.example", http.StatusForbidden},
		{"send as a viewer", "POST", "/api/send", `{"agent":"default","session":"victim","text":"hi"}`, viewerToken, "", http.StatusForbidden},
		{"anonymous event stream", "GET", "/api/events", "", "", "", http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := do(t, c.method, base+c.path, c.body, c.bearer, c.host)
			if code != c.want {
				t.Fatalf("%s %s: %d %.200s, want %d", c.method, c.path, code, body, c.want)
			}
			if code, _ := do(t, "GET", base+"/", "", writerToken, ""); code != http.StatusOK {
				t.Fatalf("after the attack the writer's GET / = %d", code)
			}
		})
	}
	// What is stored: no tool was written.
	js, err := jetstream.New(f.connect(t, "spy"))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx(t, 10*time.Second), "agent_tools")
	if err == nil {
		if e, err := kv.Get(ctx(t, 10*time.Second), "pwned"); err == nil {
			t.Errorf("the tool store holds pwned: %.200s", e.Value())
		} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Error(err)
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Error(err)
	}
}

func do(t *testing.T, method, url, body, bearer, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t, 30*time.Second), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// waitHTTP waits until url answers the writer 200.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(c, "GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+writerToken)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-c.Done():
			t.Fatalf("%s does not answer: %v", url, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
