package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/agentfleet/agentfleet/internal/window"
	openai "github.com/sashabaranov/go-openai"
)

// timeoutError is a net.Error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

var _ net.Error = timeoutError{}

func TestClass(t *testing.T) {
	var syntax error = &json.SyntaxError{}
	tests := []struct {
		name      string
		err       error
		want      string
		wantRetry bool
	}{
		{"nil", nil, "", false},
		{"429", &openai.APIError{HTTPStatusCode: 429}, ClassRateLimit, true},
		{"500", &openai.APIError{HTTPStatusCode: 500}, ClassServer, true},
		{"502 without an error object", &openai.RequestError{HTTPStatusCode: 502}, ClassServer, true},
		{"408", &openai.APIError{HTTPStatusCode: 408}, ClassTimeout, true},
		{"409", &openai.APIError{HTTPStatusCode: 409}, ClassClient, true},
		{"400", &openai.APIError{HTTPStatusCode: 400}, ClassClient, false},
		{"401", &openai.RequestError{HTTPStatusCode: 401}, ClassClient, false},
		{"context_length_exceeded code", &openai.APIError{HTTPStatusCode: 400, Code: "context_length_exceeded", Message: "reduce the length"}, ClassContextLength, false},
		{"maximum context length", &openai.APIError{HTTPStatusCode: 400, Message: "This model's maximum context length is 4096 tokens"}, ClassContextLength, false},
		{"prompt too long", &openai.APIError{HTTPStatusCode: 400, Message: "prompt is too long: 210000 tokens > 200000 maximum"}, ClassContextLength, false},
		{"413 body", &openai.RequestError{HTTPStatusCode: 413, Body: []byte("Too many tokens")}, ClassContextLength, false},
		{"context words on a 500", &openai.APIError{HTTPStatusCode: 500, Message: "context length"}, ClassServer, true},
		{"404 wrapped", fmt.Errorf("x: %w", &openai.APIError{HTTPStatusCode: 404}), ClassClient, false},
		{"stream error event", fmt.Errorf("error, %w", &openai.APIError{Message: "overloaded"}), ClassServer, true},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), ClassCanceled, false},
		{"deadline", context.DeadlineExceeded, ClassTimeout, true},
		{"net timeout", &url.Error{Op: "Post", URL: "http://x", Err: timeoutError{}}, ClassTimeout, true},
		{"refused", &url.Error{Op: "Post", URL: "http://x", Err: syscall.ECONNREFUSED}, ClassConnection, true},
		{"reset", syscall.ECONNRESET, ClassConnection, true},
		{"unexpected EOF", fmt.Errorf("stream chunk 3: %w", io.ErrUnexpectedEOF), ClassConnection, true},
		{"truncated", errTruncated, ClassConnection, true},
		{"bad JSON", fmt.Errorf("stream chunk 2: %w", syntax), ClassOther, false},
		{"other", errors.New("boom"), ClassOther, false},
		{"no choices", errNoChoices, ClassOther, false},
		{"an *Error keeps its class", &Error{Class: ClassRateLimit, Err: errors.New("x")}, ClassRateLimit, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Class(tt.err); got != tt.want {
				t.Errorf("Class(%v) = %q, want %q", tt.err, got, tt.want)
			}
			if tt.err == nil {
				return
			}
			var e *Error
			if errors.As(tt.err, &e) {
				return
			}
			if _, _, retry := classify(tt.err); retry != tt.wantRetry {
				t.Errorf("retry = %v, want %v", retry, tt.wantRetry)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{
			name: "status",
			err:  &Error{Status: 429, Attempts: 5, Class: ClassRateLimit, Err: &openai.APIError{HTTPStatusCode: 429, Message: "Rate limit reached", Type: "requests"}},
			want: "llm: 429 Too Many Requests after 5 attempts: Rate limit reached (type requests)",
		},
		{
			name: "connection",
			err:  &Error{Attempts: 1, Class: ClassConnection, Reason: "not tried again", Err: io.ErrUnexpectedEOF},
			want: "llm: connection error after 1 attempt (not tried again): unexpected EOF",
		},
		{
			name: "canceled",
			err:  &Error{Attempts: 2, Class: ClassCanceled, Err: context.Canceled},
			want: "llm: canceled after 2 attempts: context canceled",
		},
		{
			name: "empty body",
			err:  &Error{Status: 502, Attempts: 3, Class: ClassServer, Err: &openai.RequestError{HTTPStatusCode: 502}},
			want: "llm: 502 Bad Gateway after 3 attempts: empty response body",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestContextLengthIsLoopErr checks that the loop sees a refusal for length
// as window.ErrContextLength, and no other error as one.
func TestContextLengthIsLoopErr(t *testing.T) {
	long := &Error{Status: 400, Class: ClassContextLength, Err: errors.New("x")}
	if !errors.Is(fmt.Errorf("model: %w", long), window.ErrContextLength) {
		t.Error("a context_length error is not window.ErrContextLength")
	}
	if errors.Is(&Error{Status: 400, Class: ClassClient, Err: errors.New("x")}, window.ErrContextLength) {
		t.Error("a client error is window.ErrContextLength")
	}
}

func TestContextWindow(t *testing.T) {
	for model, want := range map[string]int{
		"gpt-4o-mini": 128000, "gpt-4": 8192, "gpt-4-turbo-2024-04-09": 128000, "openai/gpt-4.1-mini": 1047576,
		"qwen2.5:7b": 32768, "my-model": DefaultContextWindow, "": DefaultContextWindow,
	} {
		if got := ContextWindow(model); got != want {
			t.Errorf("ContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
}
