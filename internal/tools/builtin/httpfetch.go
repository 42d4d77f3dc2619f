package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
)

// Limits of http_fetch.
const (
	// DefaultFetchBytes is how much of a body http_fetch returns when the
	// call does not say.
	DefaultFetchBytes = 4096
	// MaxFetchBytes is the most of a body that http_fetch returns.
	MaxFetchBytes = 1 << 20
	// FetchTimeout bounds one http_fetch call, redirects included.
	FetchTimeout = 10 * time.Second
	// MaxRedirects is how many redirects http_fetch follows.
	MaxRedirects = 5
)

var httpFetchSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"url": {
			"type": "string",
			"description": "Absolute http:// or https:// URL to GET",
			"minLength": 1
		},
		"max_bytes": {
			"type": "integer",
			"description": "How many bytes of the body to return at most (default 4096)",
			"minimum": 1,
			"maximum": 1048576,
			"default": 4096
		}
	},
	"required": ["url"],
	"additionalProperties": false
}`)

// HTTPFetch returns the http_fetch tool, which GETs {"url": string,
// "max_bytes": integer} and answers with the status, the content type and
// the start of the body:
//
//	status: 200 OK
//	content-type: text/html
//
//	<!doctype html>...
//
// At most max_bytes (default DefaultFetchBytes, at most MaxFetchBytes) of the
// body are returned; a body cut short ends with a line saying so. A body that
// does not sniff as text is not shown, only its size. The details hold
// {"status", "content_type", "truncated", "url" (after redirects), "bytes"}.
// Statuses other than 2xx are results, not errors.
//
// Only http and https URLs are fetched, following at most MaxRedirects
// redirects, within FetchTimeout. Unless opts.AllowPrivate is set, the tool
// refuses to connect to loopback, private (RFC 1918, RFC 4193), link-local,
// unspecified, multicast, broadcast and CGNAT (100.64.0.0/10) addresses. The
// check is made on the address actually dialled, after DNS resolution, for
// every connection including those of redirects, so neither a DNS name nor a
// redirect can get around it. Proxy settings from the environment are
// ignored for the same reason. A refused call fails with e.g.
// `http_fetch: refusing to connect to 127.0.0.1: loopback address (start the
// worker with --allow-private to allow)`.
func HTTPFetch(opts Options) *agentfleet.Tool {
	var check func(netip.AddrPort) error
	if !opts.AllowPrivate {
		check = checkPublic
	}
	return newHTTPFetch(check)
}

// newHTTPFetch builds http_fetch with check run on every address dialled;
// nil check allows every address. Tests pass their own check.
func newHTTPFetch(check func(netip.AddrPort) error) *agentfleet.Tool {
	f := &fetcher{client: newFetchClient(check)}
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        "http_fetch",
			Label:       "Fetch URL",
			Description: "Fetches a public http:// or https:// URL with GET and returns the response status, content type and the start of the body (max_bytes, default 4096). Private and local network addresses are refused.",
			InputSchema: httpFetchSchema,
			Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
			Parallel:    true,
			// A little above FetchTimeout, so that the tool's own, more
			// precise timeout error is the one the model sees.
			TimeoutMS: (FetchTimeout + 5*time.Second).Milliseconds(),
		},
		Handler: agentfleet.HandlerFunc(f.call),
	}
}

// policyError is an error of http_fetch's own rules; its text is complete,
// so the handler returns it as is, however deep the HTTP client wrapped it.
type policyError struct{ msg string }

func (e *policyError) Error() string { return e.msg }

func newFetchClient(check func(netip.AddrPort) error) *http.Client {
	dialer := &net.Dialer{Timeout: FetchTimeout, KeepAlive: 30 * time.Second}
	if check != nil {
		// Control runs for every connection attempt, with the resolved
		// address about to be dialled: the only place where neither DNS
		// rebinding nor a redirect can slip a private address past.
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &policyError{fmt.Sprintf("http_fetch: refusing to connect to %s: not an IP address", address)}
			}
			return check(ap)
		}
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf, unchecked
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   FetchTimeout,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > MaxRedirects {
				return &policyError{fmt.Sprintf("http_fetch: stopped after %d redirects (at %s)", MaxRedirects, via[len(via)-1].URL)}
			}
			if s := req.URL.Scheme; s != "http" && s != "https" {
				return &policyError{fmt.Sprintf("http_fetch: refusing redirect to %q: scheme %q is not http or https", req.URL, s)}
			}
			return nil
		},
	}
}

// checkPublic refuses the addresses that http_fetch does not connect to
// without AllowPrivate.
func checkPublic(ap netip.AddrPort) error {
	addr := ap.Addr().Unmap()
	if reason := nonPublic(addr); reason != "" {
		return &policyError{fmt.Sprintf("http_fetch: refusing to connect to %s: %s (start the worker with --allow-private to allow)", addr, reason)}
	}
	return nil
}

var (
	cgnatPrefix     = netip.MustParsePrefix("100.64.0.0/10")
	thisNetPrefix   = netip.MustParsePrefix("0.0.0.0/8")
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")
	broadcastV4Addr = netip.MustParseAddr("255.255.255.255")
)

// nonPublic says why addr is not a public unicast address, or returns "" when
// it is one.
func nonPublic(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case !addr.IsValid():
		return "invalid address"
	case addr.IsLoopback():
		return "loopback address"
	case addr.IsUnspecified() || thisNetPrefix.Contains(addr):
		return "unspecified address"
	case addr.IsLinkLocalUnicast():
		return "link-local address"
	case addr.IsMulticast():
		return "multicast address"
	case addr.IsPrivate():
		return "private address"
	case cgnatPrefix.Contains(addr):
		return "shared (CGNAT) address"
	case addr == broadcastV4Addr:
		return "broadcast address"
	case nat64Prefix.Contains(addr.WithZone("")):
		// A NAT64 gateway would forward to the embedded IPv4 address.
		b := addr.As16()
		if reason := nonPublic(netip.AddrFrom4([4]byte(b[12:]))); reason != "" {
			return reason + " behind NAT64"
		}
	}
	return ""
}

type fetcher struct {
	client *http.Client
}

func (f *fetcher) call(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("http_fetch: %w", err)
	}
	raw, _, err := stringArg("http_fetch", call.Arguments, "url", true)
	if err != nil {
		return nil, err
	}
	maxBytes, err := intArg("http_fetch", call.Arguments, "max_bytes", false, DefaultFetchBytes, 1, MaxFetchBytes)
	if err != nil {
		return nil, err
	}
	u, err := parseFetchURL(raw)
	if err != nil {
		return nil, err
	}

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	// failed turns an error of the client or the body into the model's
	// error text: the tool's own rules first, then cancellation, then the
	// timeout, then whatever the network said.
	failed := func(doing string, err error) error {
		var pe *policyError
		switch {
		case errors.As(err, &pe):
			return pe
		case parent.Err() != nil:
			return fmt.Errorf("http_fetch: %s %s: %w", doing, u, parent.Err())
		case ctx.Err() != nil:
			return fmt.Errorf("http_fetch: %s %s: no answer within %v", doing, u, FetchTimeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("http_fetch: %s %s: %w", doing, u, err)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("http_fetch: invalid url %q: %v", raw, err)
	}
	req.Header.Set("User-Agent", "agentfleet-http_fetch/1")
	req.Header.Set("Accept", "*/*")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, failed("fetching", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, failed("reading the body of", err)
	}
	truncated := int64(len(data)) > maxBytes
	if truncated {
		data = data[:maxBytes]
	}

	ctype := resp.Header.Get("Content-Type")
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s\ncontent-type: %s\n\n", resp.Status, ctype)
	b.WriteString(bodyText(data, truncated))
	if truncated {
		fmt.Fprintf(&b, "\n\n[truncated after %d bytes]", maxBytes)
	}
	res := agentfleet.TextResult(b.String())
	res.Details = map[string]any{
		"status":       resp.StatusCode,
		"content_type": ctype,
		"truncated":    truncated,
		"url":          resp.Request.URL.String(),
		"bytes":        len(data),
	}
	return res, nil
}

// parseFetchURL accepts absolute http and https URLs with a host.
func parseFetchURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("http_fetch: invalid url %q: %v", raw, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("http_fetch: url %q has no scheme; use http:// or https://", raw)
	default:
		return nil, fmt.Errorf("http_fetch: unsupported scheme %q in %q (only http and https)", u.Scheme, raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("http_fetch: url %q has no host", raw)
	}
	return u, nil
}

// bodyText returns the body as text when it sniffs as text, with invalid
// UTF-8 replaced, and otherwise a note of its size and kind.
func bodyText(data []byte, truncated bool) string {
	if truncated {
		// Drop a character that the limit cut in half.
		for i := 1; i <= utf8.UTFMax && i <= len(data); i++ {
			if tail := data[len(data)-i:]; utf8.RuneStart(tail[0]) {
				if !utf8.FullRune(tail) {
					data = data[:len(data)-i]
				}
				break
			}
		}
	}
	kind := http.DetectContentType(data)
	if !strings.HasPrefix(kind, "text/") {
		return fmt.Sprintf("[%d bytes of binary content (%s) not shown]", len(data), kind)
	}
	return strings.ToValidUTF8(string(data), "\uFFFD")
}
