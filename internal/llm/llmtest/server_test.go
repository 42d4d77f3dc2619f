package llmtest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, url, body string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

const chatRequest = `{"model":"m","stream":true,"stream_options":{"include_usage":true},
	"messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"b"}]}],
	"tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}]}`

func TestServerRecordsRequests(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(TextReply("hi").Completion())
	resp, body := post(t, s.URL()+"/chat/completions", chatRequest)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var got struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != DefaultModel || got.Choices[0].Message.Content != "hi" || got.Choices[0].FinishReason != "stop" {
		t.Errorf("completion = %+v", got)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(reqs))
	}
	r := reqs[0]
	checks := []struct{ name, got, want string }{
		{"path", r.Path, "/chat/completions"},
		{"model", r.Model, "m"},
		{"system text", r.Messages[0].Text(), "sys"},
		{"user text", r.Messages[1].Text(), "a\nb"},
		{"tool", r.Tools[0].Function.Name, "get_time"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Errorf("stream = %v, options = %+v", r.Stream, r.StreamOptions)
	}
}

func TestServerStream(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(Reply{Text: "a b", ToolCalls: []ToolCall{{Name: "f", Arguments: `{"x":1}`}}, ArgsPiece: 4}.Stream())
	resp, body := post(t, s.BaseURL()+"/chat/completions", chatRequest)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type = %q", ct)
	}
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	// "a ", "b", call head, 2 argument pieces, finish, usage, [DONE]
	if got, want := len(events), 8; got != want {
		t.Fatalf("got %d events, want %d:\n%s", got, want, body)
	}
	if events[len(events)-1] != "data: [DONE]" {
		t.Errorf("last event = %q", events[len(events)-1])
	}
	if !strings.Contains(events[2], `"id":"call_1"`) || !strings.Contains(events[2], `"name":"f"`) {
		t.Errorf("call head = %s", events[2])
	}
}

func TestServerErrors(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(Error(429, "2"))
	resp, body := post(t, s.BaseURL()+"/chat/completions", chatRequest)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !strings.Contains(body, `"rate_limit_exceeded"`) {
		t.Errorf("scripted 429: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = post(t, s.BaseURL()+"/chat/completions", chatRequest)
	if resp.StatusCode != 500 || !strings.Contains(body, "no scripted response left for request 2") {
		t.Errorf("empty queue: %d %s", resp.StatusCode, body)
	}
	resp, _ = post(t, s.URL()+"/elsewhere", chatRequest)
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	s.Enqueue(Response{Drop: true})
	if _, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(chatRequest)); err == nil {
		t.Error("dropped connection: no error")
	}
}

func TestServerPauseAndWait(t *testing.T) {
	s := NewServer(t)
	release := make(chan struct{})
	r := TextReply("ok").Stream()
	r.Pause = release
	s.Enqueue(r, r)
	done := make(chan string, 2)
	for range 2 {
		go func() {
			resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(chatRequest))
			if err != nil {
				done <- err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			done <- string(b)
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if got := s.MaxInFlight(); got != 2 {
		t.Errorf("max in flight = %d, want 2", got)
	}
	close(release)
	for range 2 {
		if b := <-done; !strings.HasSuffix(b, "data: [DONE]\n\n") {
			t.Errorf("body = %q", b)
		}
	}
	short, stop := context.WithCancel(context.Background())
	stop()
	if err := s.WaitRequests(short, 3); err == nil {
		t.Error("WaitRequests for a request that never comes returned nil")
	}
}

func TestReplyResponseFollowsTheRequest(t *testing.T) {
	s := NewServer(t)
	s.Enqueue(TextReply("hi").Response(), TextReply("hi").Response())
	_, body := post(t, s.BaseURL()+"/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	if !strings.HasPrefix(body, "data: ") || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("stream request got %q", body)
	}
	_, body = post(t, s.BaseURL()+"/chat/completions", `{"model":"m","messages":[]}`)
	if !strings.HasPrefix(body, "{") || !strings.Contains(body, `"object":"chat.completion"`) {
		t.Errorf("whole request got %q", body)
	}
}
