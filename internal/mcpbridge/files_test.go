package mcpbridge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	busfleet "github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/mcpbridge"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
)

// offloadHost serves a bridge's tools as the worker does: each wrapped by
// objref.Offload with the fleet's object store.
type offloadHost struct {
	nc *nats.Conn
	st *objref.Store
}

func (h offloadHost) Serve(name string, tools []*agentfleet.Tool) (mcpbridge.Served, error) {
	for i, t := range tools {
		tools[i] = objref.Offload(t, h.st)
	}
	return toolrpc.Serve(h.nc, toolrpc.ServerConfig{Name: name, Tools: tools, Kind: busfleet.KindMCP, Logger: quiet()})
}

func (h offloadHost) MaxPayload() int64 { return h.nc.MaxPayload() }

// TestMCPFilesByReference: an MCP server's 20 MB image, its audio and its
// embedded binary resource reach the fleet's client as ref blocks whose
// objects read back whole (sha256); a client that reads only text still
// learns what they are.
func TestMCPFilesByReference(t *testing.T) {
	img := []byte(strings.Repeat("\x89PNG0123456789ab", 20<<16)) // 20 MiB
	audio := []byte(strings.Repeat("RIFF", 1<<10))
	blob := []byte(strings.Repeat("%PDF", 1<<10))
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "files", InputSchema: rawObject}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{Data: img, MIMEType: "image/png"},
			&mcp.AudioContent{Data: audio, MIMEType: "audio/wav"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///reports/q3.pdf", MIMEType: "application/pdf", Blob: blob}},
		}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	s := bustest.MustRunNATS(t)
	f := newFleetOn(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := objref.OpenOn(ctx, bustest.MustConnect(t, s), objref.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f.host = offloadHost{nc: f.nc, st: st}
	f.start(t, mcpbridge.Config{Spec: mcpbridge.Spec{Name: "files", URL: hs.URL}})
	res, err := f.client.Execute(ctx, &toolrpc.Call{ID: "c1", Name: "files_files", Agent: "default", Session: "s1", Timeout: time.Minute}, func(any) {})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		mime, name string
		data       []byte
	}{{"image/png", "", img}, {"audio/wav", "", audio}, {"application/pdf", "q3.pdf", blob}}
	if len(res.Content) != len(want) {
		t.Fatalf("%d blocks, want %d: %+v", len(res.Content), len(want), res.Content)
	}
	for i, w := range want {
		c := res.Content[i]
		sum := sha256.Sum256(w.data)
		if c.Type != agentfleet.ContentRef || c.MIMEType != w.mime || c.Name != w.name || c.Size != int64(len(w.data)) || c.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("block %d = %+v, want a ref of %s %q, %d bytes", i, c, w.mime, w.name, len(w.data))
			continue
		}
		r, _, err := st.Open(ctx, c.Ref)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			t.Errorf("block %d: read back: %v", i, err)
		}
		r.Close()
		if got := hex.EncodeToString(h.Sum(nil)); got != c.SHA256 {
			t.Errorf("block %d read back with sha256 %s, want %s", i, got, c.SHA256)
		}
	}
}
