package httpauth

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Facts are what a request says that the guard decides on.
type Facts struct {
	Method, Path string
	// Host is the Host header; Origin the Origin header, "" without.
	Host, Origin string
	// Authorization is the Authorization header, "" without.
	Authorization string
	// Cookie is the session cookie's value, "" without.
	Cookie string
	// ProxyUser is the value of Config.ProxyUserHeader, "" without.
	ProxyUser string
	// Now is the time of the request, for the cookie's expiry.
	Now time.Time
}

// Verdict is the guard's answer to a request.
type Verdict struct {
	// Status is 0 to serve the request, else the status to answer.
	Status int
	// Message says why not, naming what to change.
	Message string
	// Role is the request's, when served: Writer for every request to a
	// listener without writer or viewer tokens (anyone may act, as on
	// loopback without credentials).
	Role Role
	// ByCookie reports that the login session cookie authenticated it.
	ByCookie bool
	// Login asks for the login page rather than a plain error: a page
	// asked for without a valid credential.
	Login bool
}

// Decide is the guard's decision on one request: the Host check, the
// Origin check of requests that change something, the credential and the
// role the route needs.
func (g *Guard) Decide(f Facts) Verdict {
	if !g.cfg.Hosts.Allows(f.Host) {
		return Verdict{Status: http.StatusForbidden, Message: fmt.Sprintf(
			"host %q is not one this server answers to (allowed: an IP address, or %s): name it in --http-allowed-hosts (or $AGENTFLEET_HTTP_ALLOWED_HOSTS) to allow it",
			f.Host, strings.Join(g.cfg.Hosts.Names(), ", "))}
	}
	rt := classify(f.Method, f.Path)
	if !safeMethod(f.Method) && f.Origin != "" && !sameOrigin(f.Origin, f.Host) {
		return Verdict{Status: http.StatusForbidden, Message: fmt.Sprintf(
			"origin %q is not this server's (%s): a page of another site may not act here", f.Origin, f.Host)}
	}
	need := g.need(rt)
	role, byCookie, err := g.credential(f, rt)
	if need == Anonymous {
		if !g.protected() {
			role = Writer
		}
		return Verdict{Role: role, ByCookie: byCookie && err == nil}
	}
	page := rt == routePage && safeMethod(f.Method) && g.sessions != nil
	if err != nil {
		return Verdict{Status: http.StatusUnauthorized, Message: err.Error() + "; " + g.noCredential(rt), Login: page}
	}
	if role == Anonymous {
		return Verdict{Status: http.StatusUnauthorized, Message: g.noCredential(rt), Login: page}
	}
	if role < need {
		return Verdict{Status: http.StatusForbidden, Message: fmt.Sprintf(
			"%s %s needs the writer role; this credential is a viewer's (give the token of --http-token-file)", f.Method, f.Path)}
	}
	if byCookie && !safeMethod(f.Method) && f.Origin == "" {
		return Verdict{Status: http.StatusForbidden, Message: "a request authenticated by the session cookie that changes something must carry Origin, as browsers send it; " +
			"a script should send Authorization: Bearer <token> instead"}
	}
	return Verdict{Role: role, ByCookie: byCookie}
}

// need is the role route needs on this listener. Without writer or viewer
// tokens, only /mcp may need one: the writer role, given by --mcp-token.
func (g *Guard) need(rt route) Role {
	if g.protected() {
		return needs(rt, g.cfg.MetricsAuth)
	}
	if rt == routeMCP && g.cfg.MCPToken != "" {
		return Writer
	}
	return Anonymous
}

// credential is the role of a request's credential: a bearer token, else
// the session cookie. A bearer token wins over a cookie; a credential given
// and not valid is an error that says why.
func (g *Guard) credential(f Facts, rt route) (Role, bool, error) {
	if f.Authorization != "" {
		scheme, tok, _ := strings.Cut(f.Authorization, " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return Anonymous, false, fmt.Errorf("the Authorization header must be \"Bearer <token>\", not %q", scheme)
		}
		tok = strings.TrimSpace(tok)
		switch {
		case equal(tok, g.cfg.WriterToken):
			return Writer, false, nil
		case equal(tok, g.cfg.ViewerToken):
			return Viewer, false, nil
		case rt == routeMCP && equal(tok, g.cfg.MCPToken):
			return Writer, false, nil
		}
		return Anonymous, false, fmt.Errorf("the bearer token is not one of this server's")
	}
	if f.Cookie != "" && g.sessions != nil {
		role, _, err := g.sessions.check(f.Cookie, f.Now)
		if err != nil {
			return Anonymous, true, err
		}
		return role, true, nil
	}
	if u := strings.TrimSpace(f.ProxyUser); u != "" && g.cfg.ProxyUserHeader != "" {
		if slices.Contains(g.cfg.ProxyWriters, u) {
			return Writer, false, nil
		}
		return Viewer, false, nil
	}
	return Anonymous, false, nil
}

// noCredential says how to authenticate to a route.
func (g *Guard) noCredential(rt route) string {
	if rt == routeMCP && !g.protected() {
		return "this /mcp needs Authorization: Bearer <token> (the orchestrator's --mcp-token)"
	}
	if g.sessions == nil {
		return fmt.Sprintf("this server takes its users from the authenticating proxy in front (header %s): reach it through the proxy", g.cfg.ProxyUserHeader)
	}
	return "this server needs a credential: Authorization: Bearer <token> (the token of --http-token-file, or --http-viewer-token-file to watch only), or the session cookie of a login at /login"
}

// sameOrigin reports whether an Origin header names the host of the
// request.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}
