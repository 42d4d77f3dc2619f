package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/events"
)

// keepAlive is how often an idle event stream sends a comment, so that
// proxies and the browser see the connection alive.
const keepAlive = 15 * time.Second

// writeWait bounds one write to a page.
const writeWait = 10 * time.Second

// hello is the first event of a stream: what the page may do.
type hello struct {
	Replay   bool   `json:"replay"`
	ReadOnly bool   `json:"read_only"`
	Fleet    bool   `json:"fleet"`
	MaxRuns  int    `json:"max_runs"`
	Since    string `json:"since"`
	// Logout is whether the page came with a login session, to offer
	// Log out.
	Logout bool `json:"logout,omitempty"`
	// TraceURL is Config.TraceURL, for the page to link trace ids.
	TraceURL string `json:"trace_url,omitempty"`
	// TraceView is whether the dashboard serves the built-in trace view.
	TraceView bool `json:"trace_view,omitempty"`
}

// serveEvents streams the fleet's events as Server-Sent Events (see
// docs/PROTOCOL.md): first the stored ones in the range asked, then the
// live ones, without a gap or a repeat between the two. The page joins the
// hub before it replays, so that live events queue while it does; the
// replay stops at the hub's last sequence at the join, and the queued
// events all come after it.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	from, clipped, err := h.replayFrom(r)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	select {
	case h.streams <- struct{}{}:
		defer func() { <-h.streams }()
	default:
		h.cfg.Logger.Warn("dashboard: an event stream refused: the most allowed are open", "remote", r.RemoteAddr, "max", h.cfg.Limits.MaxClients)
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf(
			"this dashboard serves at most %d event streams at once (--dashboard-max-clients) and all are open: retry later", h.cfg.Limits.MaxClients))
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	c, last := h.hub.join(h.cfg.ClientBuffer, h.cfg.ClientBufferBytes)
	defer h.hub.leave(c)
	s := &sseWriter{w: w, rc: rc}
	replay := h.cfg.Feed.Retained()
	s.write([]byte("retry: 1000\n\n"))
	s.control("hello", hello{Replay: replay, ReadOnly: !h.canAct(r), Fleet: h.cfg.Fleet != nil,
		MaxRuns: h.maxRuns(r), Since: h.cfg.Since.String(), TraceURL: h.cfg.TraceURL, TraceView: h.cfg.Traces != nil,
		Logout: h.cfg.LoggedIn != nil && h.cfg.LoggedIn(r)})
	if clipped != "" {
		s.control("notice", map[string]string{"message": clipped})
	}
	n := 0
	if replay && (from.After > 0 || !from.Since.IsZero()) && last > 0 {
		rctx, stop := context.WithCancel(r.Context())
		var sent int64
		full := false
		err := h.cfg.Feed.Replay(rctx, "", from, last, func(e events.FeedEvent) {
			if full {
				return
			}
			if sent += int64(len(e.Data)); sent > h.cfg.Limits.MaxReplayBytes {
				full = true
				stop()
				return
			}
			if s.event(e) {
				n++
			}
		})
		stop()
		switch {
		case full:
			h.cfg.Logger.Info("dashboard: a replay stopped at its bound", "remote", r.RemoteAddr, "events", n, "max_bytes", h.cfg.Limits.MaxReplayBytes)
			s.control("notice", map[string]string{"message": fmt.Sprintf(
				"replay stopped after %d events at its bound of %d bytes (--dashboard-max-replay-bytes): the events after them and before now are not shown; ask a shorter range", n, h.cfg.Limits.MaxReplayBytes)})
		case err != nil && r.Context().Err() == nil:
			s.control("notice", map[string]string{"message": "replay: " + err.Error()})
		}
	} else if !replay && (from.After > 0 || r.URL.Query().Has("since")) {
		s.control("notice", map[string]string{"message": "the server keeps no event stream this dashboard may read: live events only"})
	}
	s.control("replayed", map[string]int{"count": n})
	if s.flush() != nil {
		return
	}
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-c.gone:
			// Too slow: the browser reconnects with Last-Event-ID and
			// resumes from the stream.
			h.cfg.Logger.Info("dashboard: a page fell behind by more than its buffer; its stream is closed for it to resume", "remote", r.RemoteAddr, "buffer", h.cfg.ClientBuffer, "buffer_bytes", h.cfg.ClientBufferBytes)
			return
		case <-tick.C:
			s.comment("keep-alive")
		case e := <-c.ch:
			c.took(e)
			if e.Seq != 0 && e.Seq <= last {
				continue // replayed already
			}
			s.event(e)
			// Write what is queued before flushing: one flush per burst.
			for more := true; more; {
				select {
				case e := <-c.ch:
					c.took(e)
					s.event(e)
				default:
					more = false
				}
			}
		}
		if s.flush() != nil {
			return
		}
	}
}

// replayFrom reads where the page wants to start: after the event id the
// browser last got (Last-Event-ID, sent when it reconnects) or ?after=,
// else ?since= (a duration back from now, such as 15m, or an RFC 3339
// time; 0 for none), else the configured window. A since further back
// than Limits.MaxReplay is clipped to it, with a notice for the page.
func (h *Handler) replayFrom(r *http.Request) (events.ReplayFrom, string, error) {
	from, err := h.replayAsked(r)
	if err != nil || from.Since.IsZero() {
		return from, "", err
	}
	if oldest := time.Now().Add(-h.cfg.Limits.MaxReplay); from.Since.Before(oldest) {
		return events.ReplayFrom{Since: oldest}, fmt.Sprintf("replay clipped to the last %v (--dashboard-max-replay): %q asks further back", h.cfg.Limits.MaxReplay, r.URL.Query().Get("since")), nil
	}
	return from, "", nil
}

// replayAsked is the start the page asks.
func (h *Handler) replayAsked(r *http.Request) (events.ReplayFrom, error) {
	q := r.URL.Query()
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		id = q.Get("after")
	}
	if id != "" {
		seq, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			return events.ReplayFrom{}, fmt.Errorf("event id %q is not a stream sequence", id)
		}
		return events.ReplayFrom{After: seq}, nil
	}
	since := q.Get("since")
	switch {
	case since == "":
		return events.ReplayFrom{Since: time.Now().Add(-h.cfg.Since)}, nil
	case since == "0":
		return events.ReplayFrom{}, nil
	}
	if d, err := time.ParseDuration(since); err == nil && d > 0 {
		return events.ReplayFrom{Since: time.Now().Add(-d)}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, since); err == nil {
		return events.ReplayFrom{Since: t}, nil
	}
	return events.ReplayFrom{}, fmt.Errorf("since %q is neither a duration such as 15m nor an RFC 3339 time", since)
}

// maxRuns is the page's run cap: ?max_runs= within 1..100000, else the
// configured one.
func (h *Handler) maxRuns(r *http.Request) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("max_runs")); err == nil && n > 0 && n <= 100000 {
		return n
	}
	return h.cfg.MaxRuns
}

// sseWriter writes the event stream. After a failed write it writes
// nothing more; flush reports the failure.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf bytes.Buffer
	err error
}

// event writes one fleet event: its stream sequence as the id (so that the
// browser resumes after it), its JSON as the data, on one line. An event
// that is not JSON is skipped; event reports whether it wrote it.
func (s *sseWriter) event(e events.FeedEvent) bool {
	data := e.Data
	if bytes.ContainsAny(data, "\r\n") || !json.Valid(data) {
		// A data line must not hold a line break; the orchestrator writes
		// compact JSON, anyone else may not.
		s.buf.Reset()
		if json.Compact(&s.buf, data) != nil {
			return false
		}
		data = s.buf.Bytes()
	}
	if e.Seq != 0 {
		s.write([]byte("id: " + strconv.FormatUint(e.Seq, 10) + "\n"))
	}
	s.write([]byte("data: "))
	s.write(data)
	s.write([]byte("\n\n"))
	return s.err == nil
}

// control writes a named event of the stream itself.
func (s *sseWriter) control(name string, v any) {
	b, _ := json.Marshal(v)
	s.write([]byte("event: " + name + "\ndata: "))
	s.write(b)
	s.write([]byte("\n\n"))
}

func (s *sseWriter) comment(text string) { s.write([]byte(": " + text + "\n\n")) }

func (s *sseWriter) write(b []byte) {
	if s.err != nil {
		return
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(writeWait))
	_, s.err = s.w.Write(b)
}

func (s *sseWriter) flush() error {
	if s.err == nil {
		if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			s.err = err
		}
	}
	return s.err
}
