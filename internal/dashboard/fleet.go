package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/fleet"
)

// fleetTTL is how long one answer of the fleet endpoint is served again,
// so that many pages cost one discovery round a second at most.
const fleetTTL = time.Second

// fleetAnswer is the body of GET /api/fleet.
type fleetAnswer struct {
	Time    time.Time            `json:"time"`
	Workers []fleet.WorkerStatus `json:"workers"`
}

// serveFleet answers the workers of the fleet, their tools and counters.
func (h *Handler) serveFleet(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Fleet == nil {
		httpError(w, http.StatusNotFound, "this dashboard has no fleet view")
		return
	}
	h.fleetMu.Lock()
	defer h.fleetMu.Unlock()
	if h.fleetBody == nil || time.Since(h.fleetAt) > fleetTTL {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		workers, err := h.cfg.Fleet(ctx)
		cancel()
		if err != nil {
			httpError(w, http.StatusBadGateway, "fleet: "+err.Error())
			return
		}
		if workers == nil {
			workers = []fleet.WorkerStatus{}
		}
		b, err := json.Marshal(fleetAnswer{Time: time.Now().UTC(), Workers: workers})
		if err != nil {
			httpError(w, http.StatusInternalServerError, err.Error())
			return
		}
		h.fleetBody, h.fleetAt = b, time.Now()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(h.fleetBody)
}
