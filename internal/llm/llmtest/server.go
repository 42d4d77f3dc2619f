// Package llmtest is a fake OpenAI-compatible chat completions server for
// tests: it plays scripted responses, streamed or whole, records the
// requests it receives, and injects failures (error statuses with
// Retry-After, dropped connections, streams cut or stalled midway,
// malformed chunks).
//
// It speaks HTTP only and imports nothing of go-openai, so that the tests
// of any package can point a real model client at it:
//
//	srv := llmtest.NewServer(t)
//	srv.Enqueue(llmtest.ToolCallsReply(llmtest.ToolCall{Name: "get_time", Arguments: `{"timezone":"UTC"}`}).Response())
//	srv.Enqueue(llmtest.TextReply("It is noon.").Response())
//	client, _ := llm.New(llm.Config{BaseURL: srv.BaseURL()})
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Response is one scripted response. Its zero value answers a stream
// request with nothing but [DONE]; the Reply and Error helpers make the
// usual ones.
type Response struct {
	// Status, when neither 0 nor 200, makes an error response with this
	// status, Header and Body (default an OpenAI error object).
	Status int
	// Header is added to the response.
	Header map[string]string
	// Body is the body of a whole (non-stream) response or of an error
	// response. A success response with Body set is not streamed.
	Body string

	// Chunks are the data payloads of a streamed response, sent as
	// "data: <chunk>\n\n" events and followed by "data: [DONE]" unless
	// OmitDone is set. A chunk is sent as is, so it may be malformed.
	Chunks   []string
	OmitDone bool
	// CutAfter, when positive, makes the server close the connection
	// abruptly after sending that many chunks.
	CutAfter int

	// Drop makes the server close the connection without answering: the
	// client sees a connection error.
	Drop bool

	// Pause, when not nil, makes the server stop before sending chunk
	// number PauseAfter (before anything, when 0, or for a response that
	// is not streamed) until Pause is closed or the client goes away.
	Pause      <-chan struct{}
	PauseAfter int

	// reply, when set (by Reply.Response), is sent streamed or whole as
	// the request asks.
	reply *Reply
}

// Request is a request the server received, decoded.
type Request struct {
	// Path and Header are those of the HTTP request, Body its raw body.
	Path   string      `json:"-"`
	Header http.Header `json:"-"`
	Body   []byte      `json:"-"`

	Model         string         `json:"model"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	Messages      []Message      `json:"messages"`
	Tools         []Tool         `json:"tools,omitempty"`
}

// StreamOptions are the stream options of a request.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one message of a request.
type Message struct {
	Role string `json:"role"`
	// Content is a JSON string or an array of parts.
	Content    json.RawMessage `json:"content,omitempty"`
	ToolCalls  []WireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	Name       string          `json:"name,omitempty"`
}

// Text returns the text of m: its content string, or the text of its text
// parts joined by newlines.
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
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

// WireToolCall is a tool call as the chat completions API writes it.
type WireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	} `json:"function"`
}

// Tool is a tool definition of a request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// Server is a fake chat completions server. It answers POST
// /v1/chat/completions and /chat/completions with the responses of its
// queue, in order; when the queue is empty it answers 500 with an error
// that says so. Its methods are safe for concurrent use.
type Server struct {
	srv  *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	queue    []Response
	requests []Request
	inFlight int
	maxIn    int
	changed  chan struct{} // closed and renewed at each request
}

// NewServer starts a Server, closed when tb's test ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{done: make(chan struct{}), changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handle)
	mux.HandleFunc("/chat/completions", s.handle)
	s.srv = httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server, releasing paused responses. It may be called
// more than once.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
		close(s.done)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// BaseURL returns the API root to configure a client with, ending in /v1.
func (s *Server) BaseURL() string { return s.srv.URL + "/v1" }

// URL returns the server's root URL, without /v1.
func (s *Server) URL() string { return s.srv.URL }

// Enqueue adds responses to the end of the queue.
func (s *Server) Enqueue(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// Pending returns the number of responses not yet played.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns the requests received so far, in the order they came.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns the number of requests received so far.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// MaxInFlight returns the largest number of requests the server was
// answering at once. A request counts from its arrival until the server
// starts writing the end of its response.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxIn
}

// WaitRequests waits until the server has received n requests in all, and
// returns ctx.Err() if ctx ends first.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		got, changed := len(s.requests), s.changed
		s.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("llmtest: got %d requests, waiting for %d: %w", got, n, ctx.Err())
		}
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "llmtest: "+r.Method+" "+r.URL.Path+": only POST is served")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: reading request body: "+err.Error())
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: request body is not a chat completion request: "+err.Error())
		return
	}
	req.Path, req.Header, req.Body = r.URL.Path, r.Header.Clone(), body

	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	resp, ok := Response{}, len(s.queue) > 0
	if ok {
		resp, s.queue = s.queue[0], s.queue[1:]
	}
	s.inFlight++
	s.maxIn = max(s.maxIn, s.inFlight)
	n := len(s.requests)
	s.mu.Unlock()
	// The request stops counting as in flight just before the server
	// writes the end of its response: a client cannot see the end, and
	// start another request in its place, before that.
	var once sync.Once
	end := func() {
		once.Do(func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		})
	}
	defer end()

	if !ok {
		end()
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("llmtest: no scripted response left for request %d", n))
		return
	}
	if resp.reply != nil {
		form := resp.reply.Completion()
		if req.Stream {
			form = resp.reply.Stream()
		}
		resp.Chunks, resp.Body = form.Chunks, form.Body
	}
	s.play(w, r, &resp, end)
}

// play writes resp, calling end just before it writes the end of it.
func (s *Server) play(w http.ResponseWriter, r *http.Request, resp *Response, end func()) {
	if resp.Drop {
		end()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	streamed := (resp.Status == 0 || resp.Status == http.StatusOK) && resp.Body == ""
	if !streamed || resp.PauseAfter <= 0 {
		if !s.pause(r, resp.Pause) {
			return
		}
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if resp.Status != 0 && resp.Status != http.StatusOK {
		end()
		if resp.Body == "" {
			writeError(w, resp.Status, fmt.Sprintf("llmtest: scripted %d", resp.Status))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		io.WriteString(w, resp.Body)
		return
	}
	if !streamed {
		end()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, resp.Body)
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	for i, chunk := range resp.Chunks {
		if resp.PauseAfter > 0 && i == resp.PauseAfter && !s.pause(r, resp.Pause) {
			return
		}
		last := i+1 == len(resp.Chunks) && resp.OmitDone && resp.PauseAfter < len(resp.Chunks)
		if last || (resp.CutAfter > 0 && i+1 == resp.CutAfter) {
			end()
		}
		fmt.Fprintf(w, "data: %s\n\n", chunk)
		flush()
		if resp.CutAfter > 0 && i+1 == resp.CutAfter {
			// Abort the response: the server closes the connection
			// without ending the chunked body.
			panic(http.ErrAbortHandler)
		}
	}
	if resp.PauseAfter > 0 && resp.PauseAfter >= len(resp.Chunks) && !s.pause(r, resp.Pause) {
		return
	}
	end()
	if !resp.OmitDone {
		io.WriteString(w, "data: [DONE]\n\n")
		flush()
	}
}

// pause waits for ch to be closed, and returns false if the client went
// away or the server closed first. A nil ch does not wait.
func (s *Server) pause(r *http.Request, ch <-chan struct{}) bool {
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-r.Context().Done():
		return false
	case <-s.done:
		return false
	}
}

// writeError writes an OpenAI error object with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg,
		"type":    errorType(status),
	}})
	w.Write(b)
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}
