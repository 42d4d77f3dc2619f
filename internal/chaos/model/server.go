package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is the harness's model, on a loopback port.
type Server struct {
	srv      *http.Server
	l        net.Listener
	failK    int
	mu       sync.Mutex
	failed   map[uint64]bool
	requests int
	failures int
}

// Start starts the model server. failEvery K > 0 makes the first
// attempt of about one request in K fail with HTTP 500 (the retry of the
// same request succeeds).
func Start(failEvery int) (*Server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model server: %w", err)
	}
	m := &Server{l: l, failK: failEvery, failed: map[uint64]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.handle)
	mux.HandleFunc("POST /chat/completions", m.handle)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(l)
	return m, nil
}

// BaseURL is what OPENAI_BASE_URL should be.
func (m *Server) BaseURL() string { return "http://" + m.l.Addr().String() + "/v1" }

// Close shuts the server down, waiting a little for requests in flight.
func (m *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

// Counts returns the requests served and the failures injected so far.
func (m *Server) Counts() (requests, failures int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, m.failures
}

func (m *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, "read: "+err.Error(), http.StatusBadRequest)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad request: `+err.Error()+`","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	h := hash64(string(body))
	m.mu.Lock()
	m.requests++
	fail := m.failK > 0 && h%uint64(m.failK) == 0 && !m.failed[h]
	if fail {
		m.failed[h] = true
		m.failures++
	}
	m.mu.Unlock()
	// The latency is simulated thinking time, not a wait for an event.
	t := time.NewTimer(modelLatency(body))
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return
	case <-t.C:
	}
	if fail {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"chaos: injected failure","type":"server_error"}}`)
		return
	}
	text, calls := respond(&req)
	wcalls := make([]wireToolCall, len(calls))
	for i, c := range calls {
		idx := i
		wcalls[i].Index = &idx
		wcalls[i].ID, wcalls[i].Type = c.ID, "function"
		wcalls[i].Function.Name, wcalls[i].Function.Arguments = c.Name, c.Args
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	model := req.Model
	if model == "" {
		model = "chaos"
	}
	id := fmt.Sprintf("chatcmpl-%x", h)
	usage := map[string]int{"prompt_tokens": len(body) / 4, "completion_tokens": len(text)/4 + 1, "total_tokens": len(body)/4 + len(text)/4 + 1}
	msg := map[string]any{"role": "assistant", "content": text}
	if len(wcalls) > 0 {
		msg["tool_calls"] = wcalls
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	chunk(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": msg, "finish_reason": nil}}})
	chunk(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}})
	chunk(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
		"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
