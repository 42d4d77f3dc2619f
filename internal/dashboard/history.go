package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	busclient "github.com/agentfleet/agentfleet/internal/bus/client"
)

// History reads one page of a session's stored records:
// busclient.History on the dashboard's NATS connection.
type History func(ctx context.Context, agent, session string, req busclient.HistoryRequestJSON) (*busclient.HistoryReplyJSON, error)

// historyTimeout bounds the orchestrator's answer to one page.
const historyTimeout = 10 * time.Second

// maxHistoryLimit is the most records a page may ask for: the
// orchestrator's bound (services.MaxHistoryLimit).
const maxHistoryLimit = 1000

// historyQuery is a parsed GET /api/history query.
type historyQuery struct {
	agent, session string
	req            busclient.HistoryRequestJSON
}

// parseHistoryQuery checks the query of GET /api/history: agent and
// session, and optionally from_seq and limit, each at most once and
// nothing else. The error says which parameter is wrong and why.
func parseHistoryQuery(q url.Values) (historyQuery, error) {
	var hq historyQuery
	for k, v := range q {
		switch k {
		case "agent", "session", "from_seq", "limit":
		default:
			return hq, fmt.Errorf("unknown parameter %.40q: want agent, session, from_seq and limit", k)
		}
		if len(v) != 1 {
			return hq, fmt.Errorf("parameter %s given %d times, want once", k, len(v))
		}
	}
	hq.agent, hq.session = q.Get("agent"), q.Get("session")
	if hq.agent == "" || hq.session == "" {
		return hq, errors.New("want ?agent=…&session=…")
	}
	if err := bus.CheckToken("agent", hq.agent); err != nil {
		return hq, err
	}
	if err := bus.CheckToken("session", hq.session); err != nil {
		return hq, err
	}
	if s := q.Get("from_seq"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return hq, fmt.Errorf("from_seq %.40q is not a stream sequence", s)
		}
		hq.req.FromSeq = n
	}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxHistoryLimit {
			return hq, fmt.Errorf("limit %.40q: want a number of records from 1 to %d", s, maxHistoryLimit)
		}
		hq.req.Limit = n
	}
	return hq, nil
}

// serveHistory answers GET /api/history with one page of a stored
// session, as the orchestrators give it on the session's history subject
// (docs/PROTOCOL.md).
func (h *Handler) serveHistory(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if h.cfg.History == nil {
		httpError(w, http.StatusNotFound, "this dashboard reads no stored sessions")
		return
	}
	hq, err := parseHistoryQuery(r.URL.Query())
	if err != nil {
		httpError(w, http.StatusBadRequest, "history: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), historyTimeout)
	defer cancel()
	page, err := h.cfg.History(ctx, hq.agent, hq.session, hq.req)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, page)
	case page != nil:
		// The orchestrator answered why it has no page: an unknown
		// agent, a bad name, no JetStream.
		httpError(w, http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, busclient.ErrNoOrchestrator):
		httpError(w, http.StatusServiceUnavailable, err.Error())
	default:
		httpError(w, http.StatusBadGateway, err.Error())
	}
}
