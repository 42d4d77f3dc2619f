package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	busclient "github.com/agentfleet/agentfleet/internal/bus/client"
)

// abortWait bounds the wait for the orchestrator's answer to an abort.
const abortWait = 10 * time.Second

// SendRequest is the body of POST /api/send.
type SendRequest struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Content string `json:"content"`
	// ID is an optional client message id; sending again with the same id
	// never starts a second run.
	ID string `json:"id,omitempty"`
}

// AbortRequest is the body of POST /api/abort.
type AbortRequest struct {
	Agent   string `json:"agent"`
	Session string `json:"session"`
	Reason  string `json:"reason,omitempty"`
}

// serveSend publishes a user message on the session's in subject.
func (h *Handler) serveSend(w http.ResponseWriter, r *http.Request) {
	var req SendRequest
	if !h.readAction(w, r, &req) {
		return
	}
	if err := checkSession(req.Agent, req.Session); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if strings.TrimSpace(req.Content) == "" {
		httpError(w, http.StatusBadRequest, "content is empty")
		return
	}
	msg, err := json.Marshal(map[string]string{"content": req.Content, "id": req.ID})
	if req.ID == "" {
		msg, err = json.Marshal(map[string]string{"content": req.Content})
	}
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if err := h.cfg.Sessions.Send(req.Agent, req.Session, msg); err != nil {
		actionError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "sent"})
}

// serveAbort aborts the session's run and answers with the
// orchestrator's reply: stop_reason aborted, or error with why not.
func (h *Handler) serveAbort(w http.ResponseWriter, r *http.Request) {
	var req AbortRequest
	if !h.readAction(w, r, &req) {
		return
	}
	if err := checkSession(req.Agent, req.Session); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Reason == "" {
		req.Reason = "aborted from the dashboard"
	}
	ctx, cancel := context.WithTimeout(r.Context(), abortWait)
	defer cancel()
	m, err := h.cfg.Sessions.Abort(ctx, req.Agent, req.Session, req.Reason)
	if err != nil {
		actionError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"stop_reason": string(m.StopReason), "error_message": m.ErrorMessage, "run_id": m.RunID})
}

// readAction checks what every action request must be and decodes its
// body into v: the dashboard may act, the request comes from the page's
// own origin as JSON (so that another site cannot post a form to it), and
// the body is one JSON object of the expected fields within MaxBody.
func (h *Handler) readAction(w http.ResponseWriter, r *http.Request, v any) bool {
	if h.cfg.Sessions == nil {
		httpError(w, http.StatusForbidden, "this dashboard is read only: its NATS user may not publish messages or aborts")
		return false
	}
	if !h.canAct(r) {
		httpError(w, http.StatusForbidden, "this credential may only watch: acting needs the writer role")
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			httpError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not this dashboard's (%s)", o, r.Host))
			return false
		}
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
		httpError(w, http.StatusUnsupportedMediaType, "the body must be JSON, with Content-Type: application/json")
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit))
			return false
		}
		httpError(w, http.StatusBadRequest, "reading the body: "+err.Error())
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		httpError(w, http.StatusBadRequest, "the body is not the JSON object expected: "+err.Error())
		return false
	}
	if dec.More() {
		httpError(w, http.StatusBadRequest, "the body holds more than one JSON value")
		return false
	}
	return true
}

func checkSession(agent, session string) error {
	if err := bus.CheckToken("agent", agent); err != nil {
		return err
	}
	return bus.CheckToken("session", session)
}

// actionError answers a failed action: 403 when NATS refused, 504 when
// nobody answered in time, 502 otherwise.
func actionError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, busclient.ErrDenied):
		httpError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		httpError(w, http.StatusGatewayTimeout, err.Error())
	default:
		httpError(w, http.StatusBadGateway, err.Error())
	}
}

// httpError answers {"error": text}.
func httpError(w http.ResponseWriter, code int, text string) {
	writeJSON(w, code, map[string]string{"error": text})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
