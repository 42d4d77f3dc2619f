package mcpserver

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler returns the streamable HTTP handler of the fleet's MCP server,
// to mount on /mcp and /mcp/ . It is stateless: every request gets a
// server built from the agent's tools as they are, so that any
// orchestrator answers any request and no session is kept. The agent is
// the path's last element after /mcp/ or the agent query parameter,
// DefaultAgent when neither is given; an unknown agent is a 404 that
// names the known ones. With a Token, a request without
// "Authorization: Bearer <token>" is a 401.
func (s *Server) Handler() http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		srv, _ := r.Context().Value(serverKey{}).(*mcp.Server)
		return srv
	}, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true, Logger: s.log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentfleet"`)
			http.Error(w, "401 unauthorized: this /mcp needs Authorization: Bearer <token> (the orchestrator's --mcp-token)", http.StatusUnauthorized)
			return
		}
		agent := AgentOf(r)
		srv, err := s.ForAgent(r.Context(), agent)
		if err != nil {
			http.Error(w, "404 "+err.Error(), http.StatusNotFound)
			return
		}
		sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), serverKey{}, srv)))
	})
}

type serverKey struct{}

// AgentOf returns the agent a request names: /mcp/<agent>, else
// ?agent=<agent>, else DefaultAgent.
func AgentOf(r *http.Request) string {
	if _, rest, ok := strings.Cut(r.URL.Path, "/mcp/"); ok && rest != "" {
		return strings.Trim(rest, "/")
	}
	if a := r.URL.Query().Get("agent"); a != "" {
		return a
	}
	return DefaultAgent
}

func (s *Server) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.Token)) == 1
}
