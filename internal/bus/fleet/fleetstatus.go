package fleet

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// WorkerLoad is the data a tool worker puts in the stats of each of its
// endpoints ($SRV.STATS): its calls in flight, over all its tools.
type WorkerLoad struct {
	InFlight int `json:"in_flight"`
}

// WorkerStatus is one worker of the fleet as $SRV.INFO and $SRV.STATS
// describe it, for dashboards.
type WorkerStatus struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Concurrency is the calls the worker runs at once; 0 when it
	// advertises none.
	Concurrency int `json:"concurrency"`
	BeatMS      int `json:"beat_ms"`
	// InFlight is the calls it runs now; -1 when its stats did not say.
	InFlight int `json:"in_flight"`
	// Requests and Errors count the calls the worker took since it
	// started, over all its tools (requests refused busy included).
	Requests uint64       `json:"requests"`
	Errors   uint64       `json:"errors"`
	Tools    []ToolStatus `json:"tools"`
	Started  time.Time    `json:"started"`
}

// ToolStatus is one endpoint of a worker and its counters.
type ToolStatus struct {
	Name     string  `json:"name"`
	Requests uint64  `json:"requests"`
	Errors   uint64  `json:"errors"`
	AvgMS    float64 `json:"avg_ms"`
}

// FleetStatus asks every micro service on nc for its info and its stats
// and returns the workers of this prefix, sorted by name and id. It waits
// up to wait for the first answer of each round, then until answers stop
// for a short while; only ctx ending is an error.
func FleetStatus(ctx context.Context, nc *nats.Conn, subjects bus.Subjects, wait time.Duration) ([]WorkerStatus, error) {
	byID := map[string]*WorkerStatus{}
	quiet := min(wait, 100*time.Millisecond)
	err := infoRound(ctx, nc, wait, quiet, func(info *micro.Info) {
		if info.Metadata[MetaProtocol] == "" || info.Metadata["prefix"] != subjects.Prefix {
			return
		}
		w := &WorkerStatus{ID: info.ID, Name: info.Name, Version: info.Version, InFlight: -1}
		w.Concurrency, _ = strconv.Atoi(info.Metadata[MetaConcurrency])
		w.BeatMS, _ = strconv.Atoi(info.Metadata[MetaBeat])
		for _, ep := range info.Endpoints {
			if name, ok := strings.CutPrefix(ep.Subject, subjects.Prefix+".tool."); ok {
				w.Tools = append(w.Tools, ToolStatus{Name: name})
			}
		}
		byID[w.ID] = w
	})
	if err != nil {
		return nil, err
	}
	if len(byID) > 0 {
		err = statsRound(ctx, nc, wait, quiet, func(st *micro.Stats) {
			w := byID[st.ID]
			if w == nil {
				return
			}
			w.Started = st.Started
			for _, ep := range st.Endpoints {
				var load WorkerLoad
				if len(ep.Data) > 0 && json.Unmarshal(ep.Data, &load) == nil {
					w.InFlight = load.InFlight
				}
				w.Requests += uint64(ep.NumRequests)
				w.Errors += uint64(ep.NumErrors)
				for i := range w.Tools {
					if w.Tools[i].Name == ep.Name {
						w.Tools[i].Requests, w.Tools[i].Errors = uint64(ep.NumRequests), uint64(ep.NumErrors)
						w.Tools[i].AvgMS = float64(ep.AverageProcessingTime) / float64(time.Millisecond)
					}
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]WorkerStatus, 0, len(byID))
	for _, w := range byID {
		slices.SortFunc(w.Tools, func(a, b ToolStatus) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b WorkerStatus) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// statsRound is infoRound for $SRV.STATS.
func statsRound(ctx context.Context, nc *nats.Conn, first, quiet time.Duration, fn func(*micro.Stats)) error {
	return srvRound(ctx, nc, "$SRV.STATS", "fleet stats", first, quiet, fn)
}
