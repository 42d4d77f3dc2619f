package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
)

// ApproveRequest is the body of POST /api/approve: a decision on a tool
// call that waits for approval.
type ApproveRequest struct {
	Agent      string `json:"agent"`
	Session    string `json:"session"`
	ToolCallID string `json:"tool_call_id"`
	Approve    bool   `json:"approve"`
	Reason     string `json:"reason,omitempty"`
}

// serveApprove publishes the decision and answers with the orchestrator's
// reply: 200 when it was taken, 409 with why not (the call was decided
// already, it no longer waits).
func (h *Handler) serveApprove(w http.ResponseWriter, r *http.Request) {
	var req ApproveRequest
	if !h.readAction(w, r, &req) {
		return
	}
	if err := checkSession(req.Agent, req.Session); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.ToolCallID == "" {
		httpError(w, http.StatusBadRequest, "tool_call_id is empty")
		return
	}
	if !req.Approve && req.Reason == "" {
		req.Reason = "rejected from the dashboard"
	}
	d := map[string]any{"tool_call_id": req.ToolCallID, "approve": req.Approve}
	if req.Reason != "" {
		d["reason"] = req.Reason
	}
	body, err := json.Marshal(d)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), abortWait)
	defer cancel()
	reply, err := h.cfg.Sessions.Decide(ctx, req.Agent, req.Session, body)
	if err != nil {
		actionError(w, err)
		return
	}
	code := http.StatusOK
	if !reply.OK {
		code = http.StatusConflict
	}
	writeJSON(w, code, reply)
}
