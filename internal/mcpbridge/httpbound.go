package mcpbridge

import (
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxHTTPMessage bounds one message from an MCP server over streamable
// HTTP: an application/json response body, and each server-sent event. A
// server that sends more fails the request with an error that says so,
// so that a tools/list of gigabytes cannot take the worker's memory; below
// it, a page of tools with a few tools of 10 MB is read, and those tools
// dropped one by one by their bounds. 64 MiB, four times the SDK's default
// for events.
const MaxHTTPMessage = 4 * mcp.DefaultMaxEventSize

// boundedTransport is an http.RoundTripper that cuts application/json
// response bodies at max bytes with an error that says so; the SDK reads
// them whole.
type boundedTransport struct {
	next http.RoundTripper
	max  int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	}
	return resp, nil
}

// boundedBody fails the read that would go past max bytes.
type boundedBody struct {
	io.ReadCloser
	left, max int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("the MCP server's message is larger than %d bytes, the bound of one message", b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left+1] // one byte more tells a body of exactly max from a longer one
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("the MCP server's message is larger than %d bytes, the bound of one message", b.max)
	}
	return n, err
}

// httpTransport is the streamable HTTP client transport of a bridge, with
// its messages bounded.
func httpTransport(endpoint string) *mcp.StreamableClientTransport {
	return &mcp.StreamableClientTransport{
		Endpoint: endpoint,
		// Few retries of its own: the bridge's loop reconnects, and says so.
		MaxRetries:   2,
		MaxEventSize: MaxHTTPMessage,
		HTTPClient:   &http.Client{Transport: boundedTransport{next: http.DefaultTransport, max: MaxHTTPMessage}},
	}
}
