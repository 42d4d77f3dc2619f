package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
)

func TestRetries(t *testing.T) {
	ok := llmtest.TextReply("done").Stream()
	tests := []struct {
		name      string
		script    []llmtest.Response
		edit      func(*Config)
		wantErr   string // empty: the call succeeds
		wantClass string
		wantCount int // requests at the server
		wantText  string
	}{
		{
			name:      "500 then success",
			script:    []llmtest.Response{llmtest.Error(500, ""), ok},
			wantCount: 2,
			wantText:  "done",
		},
		{
			name:      "429, 503 then success",
			script:    []llmtest.Response{llmtest.Error(429, ""), llmtest.Error(503, ""), ok},
			wantCount: 3,
			wantText:  "done",
		},
		{
			name:      "408 and 409 are retried",
			script:    []llmtest.Response{llmtest.Error(408, ""), llmtest.Error(409, ""), ok},
			wantCount: 3,
			wantText:  "done",
		},
		{
			name:      "dropped connection then success",
			script:    []llmtest.Response{{Drop: true}, ok},
			wantCount: 2,
			wantText:  "done",
		},
		{
			name:      "error event in a stream, before any text",
			script:    []llmtest.Response{{Chunks: []string{`{"error":{"message":"overloaded","type":"server_error"}}`}}, ok},
			wantCount: 2,
			wantText:  "done",
		},
		{
			name:      "stream cut before any text",
			script:    []llmtest.Response{{Chunks: []string{llmtest.ToolCallChunk("", 0, "call_1", "get_time", `{"tim`), "unsent"}, CutAfter: 1}, ok},
			wantCount: 2,
			wantText:  "done",
		},
		{
			name:      "stream ended without finish reason",
			script:    []llmtest.Response{{Chunks: []string{llmtest.ToolCallChunk("", 0, "call_1", "get_time", `{}`)}}, ok},
			wantCount: 2,
			wantText:  "done",
		},
		{
			name: "attempt timeout",
			script: []llmtest.Response{
				{Chunks: []string{llmtest.TextChunk("", "late")}, Pause: make(chan struct{})},
				ok,
			},
			edit:      func(cfg *Config) { cfg.RequestTimeout = 50 * time.Millisecond },
			wantCount: 2,
			wantText:  "done",
		},
		{
			name:      "attempts run out",
			script:    []llmtest.Response{llmtest.Error(500, ""), llmtest.Error(502, ""), llmtest.Error(503, ""), ok},
			wantErr:   "llm: 503 Service Unavailable after 3 attempts: llmtest: scripted 503 (type server_error)",
			wantClass: ClassServer,
			wantCount: 3,
		},
		{
			name:      "rate limit runs out",
			script:    []llmtest.Response{llmtest.Error(429, "0"), llmtest.Error(429, "0"), llmtest.Error(429, "0")},
			wantErr:   "llm: 429 Too Many Requests after 3 attempts",
			wantClass: ClassRateLimit,
			wantCount: 3,
		},
		{
			name:      "400 is not retried",
			script:    []llmtest.Response{llmtest.Error(400, ""), ok},
			wantErr:   "llm: 400 Bad Request after 1 attempt: llmtest: scripted 400 (type invalid_request_error)",
			wantClass: ClassClient,
			wantCount: 1,
		},
		{
			name:      "401 is not retried",
			script:    []llmtest.Response{{Status: 401, Body: "not json"}, ok},
			wantErr:   "llm: 401 Unauthorized after 1 attempt: response body: not json",
			wantClass: ClassClient,
			wantCount: 1,
		},
		{
			name:      "404 is not retried",
			script:    []llmtest.Response{llmtest.Error(404, ""), ok},
			wantErr:   "llm: 404 Not Found after 1 attempt",
			wantClass: ClassClient,
			wantCount: 1,
		},
		{
			name: "stream cut after text is not retried",
			script: []llmtest.Response{
				{Chunks: []string{llmtest.TextChunk("", "half "), llmtest.TextChunk("", "an "), "unsent"}, CutAfter: 2},
				ok,
			},
			wantErr:   "llm: connection error after 1 attempt (not tried again: part of the response was already delivered): stream chunk 3: unexpected EOF",
			wantClass: ClassConnection,
			wantCount: 1,
			wantText:  "half an ",
		},
		{
			name:      "malformed chunk is not retried",
			script:    []llmtest.Response{{Chunks: []string{llmtest.ToolCallChunk("", 0, "call_1", "x", ""), `{"choices": [`}}, ok},
			wantErr:   "llm: error after 1 attempt: stream chunk 2: unexpected end of JSON input",
			wantClass: ClassOther,
			wantCount: 1,
		},
		{
			name:      "Retry-After beyond the cap fails at once",
			script:    []llmtest.Response{llmtest.Error(429, "1"), ok},
			wantErr:   "llm: 429 Too Many Requests after 1 attempt (the server asked to retry after 1s, longer than MaxRetryDelay 20ms)",
			wantClass: ClassRateLimit,
			wantCount: 1,
		},
		{
			name:      "Retry-After date beyond the cap fails at once",
			script:    []llmtest.Response{llmtest.Error(503, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), ok},
			wantErr:   "longer than MaxRetryDelay 20ms",
			wantClass: ClassServer,
			wantCount: 1,
		},
		{
			name:      "no retries with MaxAttempts 1",
			script:    []llmtest.Response{llmtest.Error(500, ""), ok},
			edit:      func(cfg *Config) { cfg.MaxAttempts = 1 },
			wantErr:   "llm: 500 Internal Server Error after 1 attempt",
			wantClass: ClassServer,
			wantCount: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(tt.script...)
			c := newTestClient(t, srv, tt.edit)
			var d deltas
			m, err := c.Complete(context.Background(), userRequest("go"), d.add)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if got := m.Content[0].Text; got != tt.wantText {
					t.Errorf("text = %q, want %q", got, tt.wantText)
				}
			} else {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) && !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if got := Class(err); got != tt.wantClass {
					t.Errorf("Class(err) = %q, want %q", got, tt.wantClass)
				}
				var e *Error
				if !errors.As(err, &e) || e.Attempts != tt.wantCount {
					t.Errorf("err = %#v, want an *Error with %d attempts", err, tt.wantCount)
				}
			}
			if got := srv.Count(); got != tt.wantCount {
				t.Errorf("server got %d requests, want %d", got, tt.wantCount)
			}
			if got := strings.Join(d.get(), ""); got != tt.wantText {
				t.Errorf("deltas = %q, want %q (each delivered once)", got, tt.wantText)
			}
		})
	}
}

// TestRetryAfterHonoured checks that the wait a server asks for replaces
// the (here much shorter) backoff.
func TestRetryAfterHonoured(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		min    time.Duration
	}{
		{"retry-after-ms", map[string]string{"Retry-After-Ms": "40"}, 40 * time.Millisecond},
		{"retry-after seconds", map[string]string{"Retry-After": "0.04"}, 40 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Response{Status: 429, Header: tt.header}, llmtest.TextReply("ok").Stream())
			c := newTestClient(t, srv, func(cfg *Config) {
				cfg.BaseRetryDelay = time.Microsecond
				cfg.MaxRetryDelay = time.Second
			})
			start := time.Now()
			if _, err := c.Complete(context.Background(), userRequest("go"), nil); err != nil {
				t.Fatal(err)
			}
			if elapsed := time.Since(start); elapsed < tt.min {
				t.Errorf("call took %v, want at least the %v the server asked for", elapsed, tt.min)
			}
			if got := srv.Count(); got != 2 {
				t.Errorf("server got %d requests, want 2", got)
			}
		})
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"none", http.Header{}, 0, false},
		{"nil", nil, 0, false},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"fraction", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{"date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second, true},
		{"past date", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0, true},
		{"milliseconds first", http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond, true},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := retryAfter(tt.header, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("retryAfter = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestCancelStopsStream checks that a canceled context ends a stream that
// the server holds open.
func TestCancelStopsStream(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Response{
		Chunks:     []string{llmtest.TextChunk("", "first "), llmtest.TextChunk("", "never")},
		PauseAfter: 1,
		Pause:      make(chan struct{}), // never closed: the server waits for the client to go
	})
	c := newTestClient(t, srv, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once bool
		_, err := c.Complete(ctx, userRequest("go"), func(string) {
			if !once {
				once = true
				close(first)
			}
		})
		done <- err
	}()
	select {
	case <-first:
	case err := <-done:
		t.Fatalf("Complete returned before the first delta: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no delta within 10s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want one wrapping context.Canceled", err)
		}
		if got := Class(err); got != ClassCanceled {
			t.Errorf("Class(err) = %q, want canceled", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Complete did not return within 10s of the cancel")
	}
	if got := srv.Count(); got != 1 {
		t.Errorf("server got %d requests, want 1", got)
	}
}

// TestCancelStopsBackoff checks that a canceled context ends the wait
// between attempts.
func TestCancelStopsBackoff(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Response{Status: 503, Header: map[string]string{"Retry-After": "60"}})
	c := newTestClient(t, srv, func(cfg *Config) { cfg.MaxRetryDelay = 2 * time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Complete(ctx, userRequest("go"), nil)
		done <- err
	}()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := srv.WaitRequests(wait, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want one wrapping context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Complete did not return within 10s of the cancel")
	}
	if got := srv.Count(); got != 1 {
		t.Errorf("server got %d requests, want 1", got)
	}
}

// TestConcurrencyLimit checks that no more than Concurrency requests are
// in flight at once, counted at the server.
func TestConcurrencyLimit(t *testing.T) {
	const calls, limit = 6, 2
	srv := llmtest.NewServer(t)
	release := make(chan struct{})
	for range calls {
		r := llmtest.TextReply("ok").Stream()
		r.Pause = release
		srv.Enqueue(r)
	}
	c := newTestClient(t, srv, func(cfg *Config) { cfg.Concurrency = limit })
	errs := make(chan error, calls)
	for range calls {
		go func() {
			_, err := c.Complete(context.Background(), userRequest("go"), nil)
			errs <- err
		}()
	}
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := srv.WaitRequests(wait, limit); err != nil {
		t.Fatal(err)
	}
	close(release)
	for range calls {
		if err := <-errs; err != nil {
			t.Errorf("Complete: %v", err)
		}
	}
	if got := srv.MaxInFlight(); got != limit {
		t.Errorf("at most %d requests were in flight at once, want %d", got, limit)
	}
	if got := srv.Count(); got != calls {
		t.Errorf("server got %d requests, want %d", got, calls)
	}
}

// TestCancelWhileQueued checks that a call waiting for a free slot stops
// when its context is canceled.
func TestCancelWhileQueued(t *testing.T) {
	srv := llmtest.NewServer(t)
	release := make(chan struct{})
	r := llmtest.TextReply("ok").Stream()
	r.Pause = release
	srv.Enqueue(r)
	c := newTestClient(t, srv, func(cfg *Config) { cfg.Concurrency = 1 })

	first := make(chan error, 1)
	go func() {
		_, err := c.Complete(context.Background(), userRequest("go"), nil)
		first <- err
	}()
	wait, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if err := srv.WaitRequests(wait, 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Complete(ctx, userRequest("go"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("queued call: err = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first call: %v", err)
	}
	if got := srv.Count(); got != 1 {
		t.Errorf("server got %d requests, want 1", got)
	}
}
