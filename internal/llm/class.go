package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	openai "github.com/sashabaranov/go-openai"
)

// The classes of failures that Class returns, meant as metric labels.
const (
	ClassRateLimit  = "rate_limit" // 429
	ClassServer     = "server"     // 5xx, or an error event in a stream
	ClassTimeout    = "timeout"    // 408, RequestTimeout, a deadline
	ClassConnection = "connection" // refused, reset, cut short
	ClassClient     = "client"     // other 4xx: the request is wrong
	// ClassContextLength is a 400 (or 413) refusing the request as longer
	// than the model's context window: errors.Is(err, window.ErrContextLength).
	ClassContextLength = "context_length"
	ClassCanceled      = "canceled" // the caller's context was canceled
	ClassOther         = "other"    // anything else: bad JSON, a local error
)

// Class returns the class of a failure: one of ClassRateLimit, ClassServer,
// ClassTimeout, ClassConnection, ClassClient, ClassContextLength,
// ClassCanceled or ClassOther.
// It reads the class of an *Error, and works out the class of any other
// error; a nil error has class "".
func Class(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Class
	}
	class, _, _ := classify(err)
	return class
}

// classify returns the class of err, the HTTP status it carries (0 when
// none) and whether a new attempt may succeed where this one failed.
func classify(err error) (class string, status int, retry bool) {
	switch {
	case errors.Is(err, context.Canceled):
		return ClassCanceled, 0, false
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout, 0, true
	}
	if status = httpStatus(err); status != 0 {
		if contextLength(err, status) {
			return ClassContextLength, status, false
		}
		class, retry = classifyStatus(status)
		return class, status, retry
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		// An error event in the middle of a stream, with no status.
		return ClassServer, 0, true
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	if errors.As(err, &syntax) || errors.As(err, &typ) {
		return ClassOther, 0, false
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return ClassTimeout, 0, true
	case errors.Is(err, errTruncated),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.As(err, &netErr):
		return ClassConnection, 0, true
	}
	return ClassOther, 0, false
}

// classifyStatus returns the class of an HTTP error status and whether it
// is worth another attempt: 408, 409, 429 and 5xx are.
func classifyStatus(status int) (class string, retry bool) {
	switch {
	case status == http.StatusTooManyRequests:
		return ClassRateLimit, true
	case status == http.StatusRequestTimeout:
		return ClassTimeout, true
	case status == http.StatusConflict:
		return ClassClient, true
	case status >= 500:
		return ClassServer, true
	case status >= 400:
		return ClassClient, false
	}
	return ClassOther, false
}

// httpStatus returns the HTTP status of an error response, 0 when err is
// not one.
func httpStatus(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode != 0 {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}
