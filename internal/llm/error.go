package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentfleet/agentfleet/internal/window"
	openai "github.com/sashabaranov/go-openai"
)

// Error is the error Complete returns when a call failed for good. Its text
// says what failed and after how many attempts, as in
// "llm: 429 Too Many Requests after 5 attempts: Rate limit reached".
// errors.Is and errors.As see through it to the last attempt's error, so
// errors.Is(err, context.Canceled) holds for a canceled call.
type Error struct {
	// Status is the HTTP status of the last response, 0 when there was
	// none (a connection error, a timeout, a cancellation).
	Status int
	// Attempts counts the attempts made, the failed last one included.
	Attempts int
	// Class is the class of the failure, as Class returns it.
	Class string
	// Reason says why the call was not tried again, when that is not
	// that attempts ran out or the failure is not worth another attempt.
	Reason string
	// Err is the error of the last attempt.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("llm: ")
	switch {
	case e.Status != 0:
		fmt.Fprintf(&b, "%d %s", e.Status, http.StatusText(e.Status))
	case e.Class == ClassConnection:
		b.WriteString("connection error")
	case e.Class == ClassTimeout:
		b.WriteString("timeout")
	case e.Class == ClassCanceled:
		b.WriteString("canceled")
	case e.Class == ClassServer:
		b.WriteString("server error")
	default:
		b.WriteString("error")
	}
	if e.Attempts == 1 {
		b.WriteString(" after 1 attempt")
	} else {
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " (%s)", e.Reason)
	}
	fmt.Fprintf(&b, ": %s", cause(e.Err))
	return b.String()
}

// Unwrap returns the error of the last attempt.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether e is window.ErrContextLength: the model refused the
// request as longer than its context window (class ClassContextLength).
func (e *Error) Is(target error) bool {
	return target == window.ErrContextLength && e.Class == ClassContextLength
}

// cause returns the text of err without go-openai's "error, status code:
// ..." preamble, which repeats what Error already says.
func cause(err error) string {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 && apiErr.Message != "" {
		s := apiErr.Message
		if apiErr.Type != "" {
			s += " (type " + apiErr.Type + ")"
		}
		return s
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		body := strings.TrimSpace(string(reqErr.Body))
		if len(body) > 300 {
			body = body[:300] + "…"
		}
		if body == "" {
			return "empty response body"
		}
		return "response body: " + body
	}
	return err.Error()
}

// ErrorClass returns the failure's class, for the error.type of the model
// call's span.
func (e *Error) ErrorClass() string { return e.Class }
