package httpauth

import "strings"

// Role is what a credential may do on the listener.
type Role int

const (
	// Anonymous is no credential.
	Anonymous Role = iota
	// Viewer may watch: the page, its event stream, the fleet view.
	Viewer
	// Writer may also act: send, approve, abort, and use /mcp.
	Writer
)

func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Writer:
		return "writer"
	}
	return "anonymous"
}

// route is the class of a path, for what it needs.
type route int

const (
	routePage    route = iota // the page and its files, GET /
	routeAPIRead              // GET /api/...
	routeAction               // POST /api/send, /api/abort, /api/approve, any other write to /api/
	routeMCP                  // /mcp and /mcp/...
	routeMetrics              // /metrics
	routeProbe                // /healthz, /readyz
	routeLogin                // /login, /logout
	routeCard                 // GET of an A2A Agent Card: /.well-known/agent-card.json, /a2a/<agent>/.well-known/agent-card.json
	routeA2A                  // /a2a and /a2a/...: the A2A endpoints
)

// classify names the route of a request.
func classify(method, path string) route {
	switch {
	case path == "/healthz" || path == "/readyz":
		return routeProbe
	case path == "/metrics":
		return routeMetrics
	case path == "/login" || path == "/logout":
		return routeLogin
	case path == "/mcp" || strings.HasPrefix(path, "/mcp/"):
		return routeMCP
	case safeMethod(method) && (path == "/.well-known/agent-card.json" ||
		strings.HasPrefix(path, "/a2a/") && strings.HasSuffix(path, "/.well-known/agent-card.json") && strings.Count(path, "/") == 4):
		return routeCard
	case path == "/a2a" || strings.HasPrefix(path, "/a2a/"):
		return routeA2A
	case strings.HasPrefix(path, "/api/"):
		if safeMethod(method) {
			return routeAPIRead
		}
		return routeAction
	}
	return routePage
}

// safeMethod reports whether a method only reads.
func safeMethod(m string) bool { return m == "GET" || m == "HEAD" || m == "OPTIONS" }

// needs is the role a route needs on a listener with writer or viewer
// tokens. /mcp needs the writer role whatever the call: it is one
// endpoint whose tools/call runs tools, and its method is in the body;
// so do the A2A endpoints, for the same reason. An Agent Card is public,
// as A2A discovery expects: it names the agent, its tools and the scheme
// to authenticate with, nothing of any session.
func needs(r route, metricsAuth bool) Role {
	switch r {
	case routeProbe, routeLogin, routeCard:
		return Anonymous
	case routeMetrics:
		if metricsAuth {
			return Viewer
		}
		return Anonymous
	case routeAction, routeMCP, routeA2A:
		return Writer
	}
	return Viewer
}
