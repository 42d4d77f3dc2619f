package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The model is an OpenAI-compatible chat completions server whose answer is
// a pure function of the request (failure injection aside):
//
//   - the last user message reads "task <msgid>";
//   - if no assistant message with tool calls follows it, the model asks for
//     echo {"text": msgid}, sleep {"ms": N} (N from a hash of msgid, 10–400)
//     and, for about one message in three, ledger {"arg": msgid}, with call
//     ids "call_<msgid>_<i>";
//   - otherwise it answers "answer <msgid>: " and the text of every tool
//     result after the last user message, in order, joined by " | ".

// Tool names the model asks for.
const (
	ToolEcho   = "echo"
	ToolSleep  = "sleep"
	ToolLedger = "ledger"
)

// hash64 is the harness's deterministic hash of a string.
func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// sleepMS is the duration the model asks the sleep tool for, for msgid.
func sleepMS(msgid string) int { return 10 + int(hash64("sleep", msgid)%391) }

// usesLedger says whether the model calls ledger for msgid.
func usesLedger(msgid string) bool { return hash64("ledger", msgid)%3 == 0 }

// modelLatency is the model's simulated thinking time for a request.
func modelLatency(body []byte) time.Duration {
	return time.Duration(5+hash64(string(body))%60) * time.Millisecond
}

// plannedCall is a tool call the model asks for.
type plannedCall struct {
	ID, Name, Args string
}

// plannedCalls returns the calls the model asks for in the first turn of
// the run of msgid.
func plannedCalls(msgid string) []plannedCall {
	arg := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	calls := []plannedCall{
		{Name: ToolEcho, Args: arg(map[string]string{"text": msgid})},
		{Name: ToolSleep, Args: arg(map[string]int{"ms": sleepMS(msgid)})},
	}
	if usesLedger(msgid) {
		calls = append(calls, plannedCall{Name: ToolLedger, Args: arg(map[string]string{"arg": msgid})})
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%s_%d", msgid, i)
	}
	return calls
}

// answerText is the final text of the run of msgid whose tool results read
// results, in order.
func answerText(msgid string, results []string) string {
	return "answer " + msgid + ": " + strings.Join(results, " | ")
}

// wire types of the chat completions API, as much as the model needs.
type (
	chatRequest struct {
		Model    string        `json:"model"`
		Stream   bool          `json:"stream"`
		Messages []chatMessage `json:"messages"`
	}
	chatMessage struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content,omitempty"`
		ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
		ToolCallID string          `json:"tool_call_id,omitempty"`
	}
	wireToolCall struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
)

// text returns the text of a message's content: a string, or text parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// respond computes the model's answer to a request: its text and tool calls.
func respond(req *chatRequest) (text string, calls []plannedCall) {
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return "no task", nil
	}
	msgid, ok := strings.CutPrefix(strings.TrimSpace(req.Messages[last].text()), "task ")
	if !ok {
		return "not a task: " + req.Messages[last].text(), nil
	}
	var results []string
	called := false
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case "assistant":
			called = called || len(m.ToolCalls) > 0
		case "tool":
			results = append(results, m.text())
		}
	}
	if !called {
		return "", plannedCalls(msgid)
	}
	return answerText(msgid, results), nil
}

// modelServer is the harness's model, on a loopback port.
type modelServer struct {
	srv      *http.Server
	l        net.Listener
	failK    int
	mu       sync.Mutex
	failed   map[uint64]bool
	requests int
	failures int
}

// startModel starts the model server. failEvery K > 0 makes the first
// attempt of about one request in K fail with HTTP 500 (the retry of the
// same request succeeds).
func startModel(failEvery int) (*modelServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("model server: %w", err)
	}
	m := &modelServer{l: l, failK: failEvery, failed: map[uint64]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", m.handle)
	mux.HandleFunc("POST /chat/completions", m.handle)
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(l)
	return m, nil
}

// BaseURL is what OPENAI_BASE_URL should be.
func (m *modelServer) BaseURL() string { return "http://" + m.l.Addr().String() + "/v1" }

func (m *modelServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

func (m *modelServer) counts() (requests, failures int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests, m.failures
}

func (m *modelServer) handle(w http.ResponseWriter, r *http.Request) {
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
	if err := proc.Pause(r.Context(), modelLatency(body)); err != nil {
		return
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
