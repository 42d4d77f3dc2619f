package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff returns the wait after the failed attempt number n (from 1):
// full jitter, a random duration up to base·2^(n-1), the bound capped at
// max.
func backoff(base, max time.Duration, n int) time.Duration {
	bound := base
	for i := 1; i < n && bound < max; i++ {
		bound *= 2
	}
	bound = min(bound, max)
	if bound <= 0 {
		return 0
	}
	return rand.N(bound + 1)
}

// retryAfter returns the wait a response asks for, in its retry-after-ms
// header (sent by OpenAI) or its Retry-After header (seconds or an HTTP
// date), and false when it asks for none.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// sleep waits for d, or until ctx is done, when it returns ctx.Err().
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
