package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// RateServer is a chat completions server with a rate limit of its own,
// as a provider enforces one: it answers every request with Reply, counts
// the requests it receives in each second (of the wall clock), and
// answers those above Limit in their second with 429 and a Retry-After
// header. Its methods are safe for concurrent use.
type RateServer struct {
	srv *httptest.Server

	mu       sync.Mutex
	limit    int
	retry    string
	reply    Reply
	arrivals []time.Time // every request's arrival, accepted or not
	rejected []time.Time // the arrivals answered 429
	perSec   map[int64]int
}

// NewRateServer starts a RateServer that accepts limit requests per second
// (0: any number) and answers the others 429 with Retry-After retryAfter
// (seconds, as text), closed when tb's test ends.
func NewRateServer(tb testing.TB, limit int, retryAfter string, reply Reply) *RateServer {
	tb.Helper()
	s := &RateServer{limit: limit, retry: retryAfter, reply: reply, perSec: map[int64]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handle)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.srv.Close)
	return s
}

// BaseURL returns the API root to configure a client with, ending in /v1.
func (s *RateServer) BaseURL() string { return s.srv.URL + "/v1" }

// SetLimit changes the requests accepted per second.
func (s *RateServer) SetLimit(n int) {
	s.mu.Lock()
	s.limit = n
	s.mu.Unlock()
}

// Arrivals returns when each request arrived, in order.
func (s *RateServer) Arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals...)
}

// Rejected returns when each request answered 429 arrived.
func (s *RateServer) Rejected() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.rejected...)
}

// Count returns the requests received.
func (s *RateServer) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.arrivals)
}

func (s *RateServer) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	var req Request
	if err != nil || json.Unmarshal(body, &req) != nil {
		writeError(w, http.StatusBadRequest, "llmtest: request body is not a chat completion request")
		return
	}
	now := time.Now()
	s.mu.Lock()
	s.arrivals = append(s.arrivals, now)
	sec := now.Unix()
	s.perSec[sec]++
	over := s.limit > 0 && s.perSec[sec] > s.limit
	if over {
		s.rejected = append(s.rejected, now)
	}
	reply, retry, limit := s.reply, s.retry, s.limit
	s.mu.Unlock()
	if over {
		if retry != "" {
			w.Header().Set("Retry-After", retry)
		}
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("llmtest: rate limit of %d requests per second reached", limit))
		return
	}
	form := reply.Completion()
	if req.Stream {
		form = reply.Stream()
	}
	if form.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, form.Body)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, c := range form.Chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// PerSecond counts times by the second (of the wall clock) they fall in.
func PerSecond(times []time.Time) map[int64]int {
	m := map[int64]int{}
	for _, t := range times {
		m[t.Unix()]++
	}
	return m
}
