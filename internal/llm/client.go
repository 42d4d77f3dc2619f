// Package llm calls language models for the loop: Client speaks the OpenAI
// chat completions API (of OpenAI or of any compatible server), streaming
// by default, with retries, backoff and a bound on concurrent requests;
// Offline is a deterministic stand-in that needs no network.
//
// It is the only package of the project that imports go-openai: both
// models implement loop.Model and speak in the domain types of package
// agentfleet.
package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/quota"
	"github.com/agentfleet/agentfleet/internal/retry"
	"github.com/agentfleet/agentfleet/internal/tracing"
	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Client calls an OpenAI-compatible chat completions API. It is safe for
// concurrent use, and meant to be shared: its Concurrency bound holds
// across all the calls made through it.
type Client struct {
	cfg      Config
	api      *openai.Client
	provider string
	// sem bounds the requests in flight; nil means no bound.
	sem chan struct{}
}

var _ loop.Model = (*Client)(nil)

// errNoChoices is the error of a whole response without any choice.
var errNoChoices = errors.New("response has no choices")

// New returns a Client configured by cfg, whose zero fields take their
// defaults. It fails when a field is wrong, naming it; it makes no request.
func New(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	headers := make(map[string]string, len(cfg.Headers))
	for k, v := range cfg.Headers {
		headers[k] = v
	}
	cfg.Headers = headers
	hc := *cfg.HTTPClient
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &transport{base: base, headers: headers}
	cfg.HTTPClient = &hc

	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.OrgID = cfg.Organization
	oc.HTTPClient = &hc

	c := &Client{cfg: cfg, api: openai.NewClientWithConfig(oc), provider: provider(cfg.BaseURL)}
	if cfg.Concurrency > 0 {
		c.sem = make(chan struct{}, cfg.Concurrency)
	}
	return c, nil
}

// provider returns the Provider of the messages of a client of baseURL:
// "openai" for OpenAI's own API, the host name otherwise.
func provider(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Hostname() == "" || u.Hostname() == "api.openai.com" {
		return "openai"
	}
	return u.Hostname()
}

// Complete implements loop.Model: it asks the model for the next message
// of the conversation of req, passing text deltas to onDelta (which may be
// nil) as they arrive. Without streaming, onDelta receives the whole text
// at once.
//
// Connection errors, timeouts, and responses 408, 409, 429 and 5xx are
// tried again, up to MaxAttempts attempts, after a backoff or the wait the
// server asks for with Retry-After; a wait longer than MaxRetryDelay fails
// the call instead. A stream is not tried again once part of its text has
// reached onDelta, so that no text is delivered twice. A call that failed
// for good returns an *Error; a canceled ctx stops the call, waits
// included, and returns an *Error wrapping ctx.Err().
func (c *Client) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	if req == nil {
		return nil, errors.New("llm: Complete: request is nil")
	}
	msgs, tools, err := convertRequest(req)
	if err != nil {
		return nil, err
	}
	creq := openai.ChatCompletionRequest{Model: req.Model, Messages: msgs, Tools: tools}
	if creq.Model == "" {
		creq.Model = c.cfg.Model
	}
	if *c.cfg.Stream {
		creq.Stream = true
		creq.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}

	delivered := false
	deliver := func(s string) {
		delivered = true
		if onDelta != nil {
			onDelta(s)
		}
	}
	var (
		out      *agentfleet.AssistantMessage
		attempts int
	)
	policy := retry.Policy{
		Base: c.cfg.BaseRetryDelay, Max: c.cfg.MaxRetryDelay, MaxAttempts: c.cfg.MaxAttempts,
		OnRetry: func(attempt int, err error, wait time.Duration) {
			span := trace.SpanFromContext(ctx)
			var e *Error
			if !span.IsRecording() || !errors.As(err, &e) {
				return
			}
			span.AddEvent(tracing.EventRetry, trace.WithAttributes(
				attribute.Int("attempt", attempt+1), tracing.ErrorType.String(e.Class),
				attribute.Int("http.response.status_code", e.Status), attribute.Float64("wait_ms", float64(wait.Microseconds())/1000),
				tracing.Reason.String(e.Err.Error()),
			))
		},
	}
	call := quota.Call{Model: creq.Model, Agent: req.Agent, Session: req.Session, Priority: req.Priority, Tokens: req.EstimatedTokens,
		Notify: func(e *agentfleet.Event) { loop.Notify(ctx, e) }}
	err = retry.Do(ctx, policy, func(ctx context.Context, attempt int) error {
		attempts = attempt
		began := time.Now()
		r, header, err := c.attempt(ctx, &creq, call, deliver)
		if c.cfg.Observe != nil {
			c.cfg.Observe(time.Since(began), err)
		}
		if err == nil {
			if r.model == "" {
				r.model = creq.Model
			}
			out = r.message(c.provider)
			return nil
		}
		if ctx.Err() != nil {
			return retry.Permanent(canceled(ctx, attempt))
		}
		class, status, again := classify(err)
		e := &Error{Status: status, Attempts: attempt, Class: class, Err: err}
		if !again || attempt >= c.cfg.MaxAttempts {
			return retry.Permanent(e)
		}
		if delivered {
			e.Reason = "not tried again: part of the response was already delivered"
			return retry.Permanent(e)
		}
		if d, ok := retryAfter(header, time.Now()); ok {
			if d > c.cfg.MaxRetryDelay {
				e.Reason = fmt.Sprintf("the server asked to retry after %v, longer than MaxRetryDelay %v", d, c.cfg.MaxRetryDelay)
				return retry.Permanent(e)
			}
			return retry.After(e, d)
		}
		return e
	})
	if err == nil {
		return out, nil
	}
	if e := (*Error)(nil); errors.As(err, &e) {
		return nil, e
	}
	// The context ended during a wait between attempts.
	return nil, canceled(ctx, attempts)
}

// canceled returns the error of a call whose ctx ended after attempts
// attempts.
func canceled(ctx context.Context, attempts int) *Error {
	class := ClassCanceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		class = ClassTimeout
	}
	return &Error{Attempts: attempts, Class: class, Err: ctx.Err()}
}

// attempt makes one request, within the Concurrency bound and the
// RequestTimeout. It returns the reply, or the error and the headers of
// the last response (nil when none came), where Retry-After may be.
func (c *Client) attempt(ctx context.Context, creq *openai.ChatCompletionRequest, call quota.Call, deliver func(string)) (r *reply, header http.Header, err error) {
	if c.sem != nil {
		select {
		case c.sem <- struct{}{}:
			defer func() { <-c.sem }()
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if c.cfg.Gate != nil {
		t, gerr := c.cfg.Gate.Admit(ctx, call)
		if gerr != nil {
			return nil, nil, gerr
		}
		defer func() { c.done(t, r, header, err) }()
	}
	actx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	actx, rec := withResponseRecord(actx)

	if creq.Stream {
		r, err = c.stream(actx, creq, deliver)
	} else {
		r, err = c.complete(actx, creq, deliver)
	}
	_, header = rec.get()
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no complete response within RequestTimeout %v: %w", c.cfg.RequestTimeout, context.DeadlineExceeded)
	}
	return r, header, err
}

// done reports the end of an admitted attempt to its ticket: the usage of
// its reply, or the status of its error and the wait its response asked
// for.
func (c *Client) done(t quota.Ticket, r *reply, header http.Header, err error) {
	if err == nil {
		var u *agentfleet.Usage
		if r != nil && r.usage != nil {
			u = &agentfleet.Usage{InputTokens: r.usage.PromptTokens, OutputTokens: r.usage.CompletionTokens, TotalTokens: r.usage.TotalTokens}
		}
		t.Done(u, http.StatusOK, 0)
		return
	}
	_, status, _ := classify(err)
	wait, _ := retryAfter(header, time.Now())
	t.Done(nil, status, wait)
}

// stream makes a streamed request and reads its response.
func (c *Client) stream(ctx context.Context, creq *openai.ChatCompletionRequest, deliver func(string)) (*reply, error) {
	s, err := c.api.CreateChatCompletionStream(ctx, *creq)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return readStream(s, deliver)
}

// complete makes a request for a whole response.
func (c *Client) complete(ctx context.Context, creq *openai.ChatCompletionRequest, deliver func(string)) (*reply, error) {
	resp, err := c.api.CreateChatCompletion(ctx, *creq)
	if err != nil {
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, errNoChoices
	}
	r := replyFromCompletion(&resp)
	if r.text.Len() > 0 {
		deliver(r.text.String())
	}
	return r, nil
}
