package llm

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// newTestClient returns a Client of srv with fast retries; edit changes
// its Config first, when not nil.
func newTestClient(t *testing.T, srv *llmtest.Server, edit func(*Config)) *Client {
	t.Helper()
	cfg := Config{
		APIKey:         "test-key",
		BaseURL:        srv.BaseURL(),
		Model:          "test-model",
		BaseRetryDelay: time.Millisecond,
		MaxRetryDelay:  20 * time.Millisecond,
		MaxAttempts:    3,
		RequestTimeout: 10 * time.Second,
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deltas collects the deltas of a call, safely for the concurrent reads
// of a test.
type deltas struct {
	mu   sync.Mutex
	list []string
}

func (d *deltas) add(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.list = append(d.list, s)
}

func (d *deltas) get() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.list...)
}

func userRequest(text string) *loop.Request {
	return &loop.Request{
		SystemPrompt: "Be brief.",
		Messages:     []agentfleet.Message{agentfleet.NewUserMessage(text)},
		Tools:        []agentfleet.ToolDef{{Name: "get_time", Description: "Time."}},
	}
}

// contentJSON returns the content of m as JSON, for comparisons.
func contentJSON(t *testing.T, m *agentfleet.AssistantMessage) string {
	t.Helper()
	b, err := json.Marshal(m.Content)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCompleteStreamText(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.TextReply("Hello there world").Stream())
	c := newTestClient(t, srv, func(cfg *Config) {
		cfg.Organization = "org-1"
		cfg.Headers = map[string]string{"X-Gateway": "fleet"}
	})

	var d deltas
	m, err := c.Complete(context.Background(), userRequest("hi"), d.add)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(d.get(), "|"), "Hello |there |world"; got != want {
		t.Errorf("deltas = %q, want %q", got, want)
	}
	if got, want := contentJSON(t, m), `[{"type":"text","text":"Hello there world"}]`; got != want {
		t.Errorf("content = %s, want %s", got, want)
	}
	checks := []struct{ name, got, want string }{
		{"role", m.Role, agentfleet.RoleAssistant},
		{"api", m.API, "openai-completions"},
		{"provider", m.Provider, "127.0.0.1"},
		{"model", m.Model, llmtest.DefaultModel},
		{"stop reason", string(m.StopReason), "stop"},
		{"error message", m.ErrorMessage, ""},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.name, ch.got, ch.want)
		}
	}
	if m.Usage == nil || *m.Usage != (agentfleet.Usage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13}) {
		t.Errorf("usage = %+v, want 10/3/13", m.Usage)
	}
	if m.Timestamp.IsZero() || m.Timestamp.Location() != time.UTC {
		t.Errorf("timestamp = %v, want now in UTC", m.Timestamp)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	reqChecks := []struct{ name, got, want string }{
		{"path", r.Path, "/v1/chat/completions"},
		{"model", r.Model, "test-model"},
		{"authorization", r.Header.Get("Authorization"), "Bearer test-key"},
		{"organization", r.Header.Get("OpenAI-Organization"), "org-1"},
		{"gateway header", r.Header.Get("X-Gateway"), "fleet"},
		{"system message", r.Messages[0].Role + ":" + r.Messages[0].Text(), "system:Be brief."},
		{"user message", r.Messages[1].Role + ":" + r.Messages[1].Text(), "user:hi"},
		{"tool", r.Tools[0].Function.Name, "get_time"},
	}
	for _, ch := range reqChecks {
		if ch.got != ch.want {
			t.Errorf("request %s = %q, want %q", ch.name, ch.got, ch.want)
		}
	}
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("request stream = %v, stream_options = %+v; want a stream with usage", r.Stream, r.StreamOptions)
	}
}

func TestCompleteStreamAssembly(t *testing.T) {
	const model = "gpt-test"
	tc := llmtest.ToolCallChunk
	tests := []struct {
		name        string
		resp        llmtest.Response
		wantContent string
		wantStop    agentfleet.StopReason
		wantErrMsg  string
		wantText    string
		wantUsage   *agentfleet.Usage
	}{
		{
			name: "text then tool calls",
			resp: llmtest.Reply{
				Model: model,
				Text:  "Let me check.",
				ToolCalls: []llmtest.ToolCall{
					{ID: "call_a", Name: "get_time", Arguments: `{"timezone":"Asia/Tokyo"}`},
					{ID: "call_b", Name: "calculator", Arguments: `{"expression":"2+2"}`},
				},
			}.Stream(),
			wantContent: `[{"type":"text","text":"Let me check."},` +
				`{"type":"tool_call","id":"call_a","name":"get_time","arguments":"{\"timezone\":\"Asia/Tokyo\"}"},` +
				`{"type":"tool_call","id":"call_b","name":"calculator","arguments":"{\"expression\":\"2+2\"}"}]`,
			wantStop:  agentfleet.StopReasonToolUse,
			wantText:  "Let me check.",
			wantUsage: &agentfleet.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15},
		},
		{
			name: "interleaved indexes",
			resp: llmtest.Response{Chunks: []string{
				tc(model, 1, "call_y", "second", ""),
				tc(model, 0, "call_x", "first", ""),
				tc(model, 1, "", "", `{"b"`),
				tc(model, 0, "", "", `{"a"`),
				tc(model, 0, "", "", `:1}`),
				tc(model, 1, "", "", `:2}`),
				llmtest.FinishChunk(model, "tool_calls"),
			}},
			wantContent: `[{"type":"tool_call","id":"call_x","name":"first","arguments":"{\"a\":1}"},` +
				`{"type":"tool_call","id":"call_y","name":"second","arguments":"{\"b\":2}"}]`,
			wantStop: agentfleet.StopReasonToolUse,
		},
		{
			name: "arguments split over many chunks",
			resp: llmtest.Reply{
				Model:     model,
				ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "echo", Arguments: `{"text":"a long piece of text, sent one byte at a time"}`}},
				ArgsPiece: 1,
				Usage:     &llmtest.Usage{PromptTokens: 7, CompletionTokens: 11, TotalTokens: 18},
			}.Stream(),
			wantContent: `[{"type":"tool_call","id":"call_1","name":"echo","arguments":"{\"text\":\"a long piece of text, sent one byte at a time\"}"}]`,
			wantStop:    agentfleet.StopReasonToolUse,
			wantUsage:   &agentfleet.Usage{InputTokens: 7, OutputTokens: 11, TotalTokens: 18},
		},
		{
			name: "malformed arguments kept as a JSON string",
			resp: llmtest.Reply{
				Model:     model,
				ToolCalls: []llmtest.ToolCall{{ID: "call_1", Name: "get_time", Arguments: `{"timezone": "Asia/To`}},
			}.Stream(),
			wantContent: `[{"type":"tool_call","id":"call_1","name":"get_time","arguments":"{\"timezone\": \"Asia/To"}]`,
			wantStop:    agentfleet.StopReasonToolUse,
		},
		{
			name: "tool calls with finish reason stop",
			resp: llmtest.Reply{
				Model:        model,
				ToolCalls:    []llmtest.ToolCall{{ID: "call_1", Name: "list_tools", Arguments: `{}`}},
				FinishReason: "stop",
			}.Stream(),
			wantContent: `[{"type":"tool_call","id":"call_1","name":"list_tools","arguments":"{}"}]`,
			wantStop:    agentfleet.StopReasonToolUse,
		},
		{
			name:        "length",
			resp:        llmtest.Reply{Model: model, Text: "cut", FinishReason: "length"}.Stream(),
			wantContent: `[{"type":"text","text":"cut"}]`,
			wantStop:    agentfleet.StopReasonLength,
			wantText:    "cut",
		},
		{
			name:        "content filter",
			resp:        llmtest.Reply{Model: model, FinishReason: "content_filter"}.Stream(),
			wantContent: `[]`,
			wantStop:    agentfleet.StopReasonStop,
			wantErrMsg:  "content filtered",
		},
		{
			name: "cut after the finish reason",
			resp: llmtest.Response{
				Chunks:   []string{llmtest.TextChunk(model, "all "), llmtest.TextChunk(model, "there"), llmtest.FinishChunk(model, "stop"), "never sent"},
				CutAfter: 3,
			},
			wantContent: `[{"type":"text","text":"all there"}]`,
			wantStop:    agentfleet.StopReasonStop,
			wantText:    "all there",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(tt.resp)
			c := newTestClient(t, srv, nil)
			var d deltas
			m, err := c.Complete(context.Background(), userRequest("go"), d.add)
			if err != nil {
				t.Fatal(err)
			}
			if got := contentJSON(t, m); got != tt.wantContent {
				t.Errorf("content =\n%s\nwant\n%s", got, tt.wantContent)
			}
			if m.StopReason != tt.wantStop {
				t.Errorf("stop reason = %q, want %q", m.StopReason, tt.wantStop)
			}
			if m.ErrorMessage != tt.wantErrMsg {
				t.Errorf("error message = %q, want %q", m.ErrorMessage, tt.wantErrMsg)
			}
			if got := strings.Join(d.get(), ""); got != tt.wantText {
				t.Errorf("deltas = %q, want %q", got, tt.wantText)
			}
			if tt.wantUsage != nil && (m.Usage == nil || *m.Usage != *tt.wantUsage) {
				t.Errorf("usage = %+v, want %+v", m.Usage, tt.wantUsage)
			}
			if m.Model != model {
				t.Errorf("model = %q, want %q", m.Model, model)
			}
			if got := srv.Count(); got != 1 {
				t.Errorf("server got %d requests, want 1", got)
			}
		})
	}
}

// TestMalformedArgumentsReachTheLoop checks that invalid argument JSON
// from the model survives as a string that the loop turns into an
// ArgumentsError, and does not break the message.
func TestMalformedArgumentsReachTheLoop(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.ToolCallsReply(
		llmtest.ToolCall{ID: "call_1", Name: "calculator", Arguments: `{"expression": 2+`},
		llmtest.ToolCall{ID: "call_2", Name: "get_time", Arguments: `{"timezone":"UTC"}`},
	).Stream())
	c := newTestClient(t, srv, nil)
	m, err := c.Complete(context.Background(), userRequest("go"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Fatalf("message does not marshal: %v", err)
	}
	calls := loop.ExtractToolCalls(m)
	if len(calls) != 2 {
		t.Fatalf("got %d calls, want 2", len(calls))
	}
	if calls[0].ArgumentsError == "" {
		t.Errorf("call 1: no ArgumentsError for malformed arguments")
	}
	if calls[1].ArgumentsError != "" || calls[1].Arguments["timezone"] != "UTC" {
		t.Errorf("call 2 = %+v, want timezone UTC", calls[1])
	}
}

func TestCompleteNonStream(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Reply{
		Model:     "gpt-whole",
		Text:      "Checking the time.",
		ToolCalls: []llmtest.ToolCall{{ID: "call_9", Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`}},
	}.Completion())
	c := newTestClient(t, srv, func(cfg *Config) {
		stream := false
		cfg.Stream = &stream
	})
	var d deltas
	m, err := c.Complete(context.Background(), userRequest("time in Paris"), d.add)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"text","text":"Checking the time."},{"type":"tool_call","id":"call_9","name":"get_time","arguments":"{\"timezone\":\"Europe/Paris\"}"}]`
	if got := contentJSON(t, m); got != want {
		t.Errorf("content =\n%s\nwant\n%s", got, want)
	}
	if got, want := strings.Join(d.get(), "|"), "Checking the time."; got != want {
		t.Errorf("deltas = %q, want %q (the whole text once)", got, want)
	}
	if m.StopReason != agentfleet.StopReasonToolUse || m.Model != "gpt-whole" {
		t.Errorf("stop reason, model = %q, %q; want tool_use, gpt-whole", m.StopReason, m.Model)
	}
	if m.Usage == nil || m.Usage.InputTokens != 10 || m.Usage.OutputTokens != 4 {
		t.Errorf("usage = %+v, want 10 in, 4 out", m.Usage)
	}
	r := srv.Requests()[0]
	if r.Stream || r.StreamOptions != nil {
		t.Errorf("request stream = %v, stream_options = %+v; want neither", r.Stream, r.StreamOptions)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name         string
		cfg          Config
		wantErr      string
		wantProvider string
	}{
		{name: "zero", cfg: Config{}, wantProvider: "openai"},
		{name: "gateway", cfg: Config{BaseURL: "https://gateway.example.com:8443/v1/"}, wantProvider: "gateway.example.com"},
		{name: "no scheme", cfg: Config{BaseURL: "localhost:8080/v1"}, wantErr: "want an http or https URL"},
		{name: "negative timeout", cfg: Config{RequestTimeout: -1}, wantErr: "RequestTimeout is negative"},
		{name: "negative attempts", cfg: Config{MaxAttempts: -1}, wantErr: "MaxAttempts is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.provider != tt.wantProvider {
				t.Errorf("provider = %q, want %q", c.provider, tt.wantProvider)
			}
		})
	}
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.Model != DefaultModel || c.cfg.MaxAttempts != 5 || c.cfg.RequestTimeout != 120*time.Second ||
		c.cfg.MaxRetryDelay != 30*time.Second || c.cfg.BaseRetryDelay != 500*time.Millisecond ||
		cap(c.sem) != 64 || !*c.cfg.Stream {
		t.Errorf("defaults = %+v, want the documented ones", c.cfg)
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
	t.Setenv("OPENAI_MODEL", "llama3")
	cfg := ConfigFromEnv()
	if cfg.APIKey != "sk-env" || cfg.BaseURL != "http://localhost:11434/v1" || cfg.Model != "llama3" {
		t.Errorf("ConfigFromEnv() = %+v", cfg)
	}
}

func TestCompleteNilRequest(t *testing.T) {
	c, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), nil, nil); err == nil {
		t.Error("Complete(nil) succeeded")
	}
	if _, err := (Offline{}).Complete(context.Background(), nil, nil); err == nil {
		t.Error("Offline.Complete(nil) succeeded")
	}
}
