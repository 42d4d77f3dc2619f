package llm

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/agentfleet/agentfleet/internal/quota"
)

// Defaults of Config, used where a field is left at its zero value.
const (
	DefaultBaseURL        = "https://api.openai.com/v1"
	DefaultModel          = "gpt-4o-mini"
	DefaultRequestTimeout = 120 * time.Second
	DefaultMaxAttempts    = 5
	DefaultBaseRetryDelay = 500 * time.Millisecond
	DefaultMaxRetryDelay  = 30 * time.Second
	DefaultConcurrency    = 64
)

// Config configures a Client. The zero value is usable: every field is
// optional and says its default.
type Config struct {
	// APIKey is sent as a bearer token. Optional; default none, which suits
	// local OpenAI-compatible servers that need no key.
	APIKey string
	// BaseURL is the API root, up to and including its version
	// (".../v1"); requests go to BaseURL + "/chat/completions". Optional;
	// default DefaultBaseURL.
	BaseURL string
	// Model is the model asked for when a Request names none. Optional;
	// default DefaultModel.
	Model string
	// Organization is sent as the OpenAI-Organization header. Optional.
	Organization string
	// Headers are added to every request, for gateways that want their
	// own; they override headers of the same name that the client sets.
	// Optional.
	Headers map[string]string

	// RequestTimeout bounds one attempt, from sending the request to the
	// end of its response (the whole stream, when streaming). Optional;
	// default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Stream says whether to ask for a streamed response. Optional; nil
	// means true.
	Stream *bool

	// MaxAttempts bounds the attempts of one call, the first included.
	// Optional; default DefaultMaxAttempts. 1 disables retries.
	MaxAttempts int
	// BaseRetryDelay is the backoff before the second attempt; it doubles
	// with each further attempt, and the delay waited is drawn at random
	// below it (full jitter). Optional; default DefaultBaseRetryDelay.
	BaseRetryDelay time.Duration
	// MaxRetryDelay caps every wait between attempts (spec
	// maxRetryDelayMs). A server that asks, with Retry-After, for a longer
	// wait makes the call fail at once. Optional; default
	// DefaultMaxRetryDelay.
	MaxRetryDelay time.Duration

	// Concurrency bounds the requests in flight at once through one
	// Client, across all the sessions that share it. Optional; default
	// DefaultConcurrency; negative means no bound.
	Concurrency int

	// HTTPClient makes the requests. Optional; default a new http.Client
	// on http.DefaultTransport. The Client wraps (a copy of) it to add
	// Headers and to read response headers such as Retry-After; the value
	// passed is not modified.
	HTTPClient *http.Client

	// Gate, if set, admits every attempt of a call under a quota shared
	// with other processes (package bus/limiter), and learns of its end:
	// its usage, and a provider's Retry-After, which pauses the model for
	// all of them. Optional; default none.
	Gate quota.Gate

	// Observe, if set, is called after every attempt with its duration and
	// its error (nil on success), for metrics. Optional.
	Observe func(d time.Duration, err error)
}

// ConfigFromEnv returns a Config that takes APIKey from OPENAI_API_KEY,
// BaseURL from OPENAI_BASE_URL and Model from OPENAI_MODEL; unset
// variables leave their fields at the default.
func ConfigFromEnv() Config {
	return Config{
		APIKey:  os.Getenv("OPENAI_API_KEY"),
		BaseURL: os.Getenv("OPENAI_BASE_URL"),
		Model:   os.Getenv("OPENAI_MODEL"),
	}
}

// withDefaults returns cfg with its defaults filled in, or an error naming
// the first field that is wrong.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return cfg, fmt.Errorf("llm: config BaseURL %q: %w", cfg.BaseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cfg, fmt.Errorf("llm: config BaseURL %q: want an http or https URL with a host", cfg.BaseURL)
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Stream == nil {
		stream := true
		cfg.Stream = &stream
	}
	durations := []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"RequestTimeout", &cfg.RequestTimeout, DefaultRequestTimeout},
		{"BaseRetryDelay", &cfg.BaseRetryDelay, DefaultBaseRetryDelay},
		{"MaxRetryDelay", &cfg.MaxRetryDelay, DefaultMaxRetryDelay},
	}
	for _, d := range durations {
		if *d.v < 0 {
			return cfg, fmt.Errorf("llm: config %s is negative (%v)", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.MaxAttempts < 0 {
		return cfg, fmt.Errorf("llm: config MaxAttempts is negative (%d)", cfg.MaxAttempts)
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return cfg, nil
}
