package dashboard_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/events"
	"github.com/agentfleet/agentfleet/internal/dashboard"
)

// TestCheckTraceURL: a trace URL template is an absolute http or https URL
// that holds {trace_id}; the error says what is wrong.
func TestCheckTraceURL(t *testing.T) {
	for _, tc := range []struct {
		name, url, err string
	}{
		{"none", "", ""},
		{"jaeger", "http://localhost:16686/trace/{trace_id}", ""},
		{"https", "https://tracing.example.com/trace/{trace_id}", ""},
		{"tempo explore", `https://grafana.example.com/explore?left={"datasource":"tempo","queries":[{"query":"{trace_id}"}]}`, ""},
		{"in the query", "http://zipkin:9411/zipkin/traces/{trace_id}?lookback=1h", ""},
		{"no placeholder", "http://localhost:16686/trace/", "holds no {trace_id}"},
		{"other placeholder", "http://localhost:16686/trace/{traceid}", "holds no {trace_id}"},
		{"javascript", "javascript:alert('{trace_id}')", "not an http or https URL"},
		{"ftp", "ftp://files.example.com/{trace_id}", "not an http or https URL"},
		{"relative", "/trace/{trace_id}", "not an http or https URL"},
		{"no host", "http:///trace/{trace_id}", "not an absolute URL with a host"},
		{"opaque", "http:trace/{trace_id}", "not an absolute URL with a host"},
		{"control character", "http://localhost/\x01{trace_id}", "not a URL: net/url: invalid control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := dashboard.CheckTraceURL(tc.url)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("CheckTraceURL(%q) = %v, want nil", tc.url, err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("CheckTraceURL(%q) = %v, want an error saying %q", tc.url, err, tc.err)
			}
		})
	}
}

// unfollowable is a feed that fails to be followed.
type unfollowable struct{}

func (unfollowable) Retained() bool { return false }
func (unfollowable) Follow(context.Context, func(events.FeedEvent)) (func(), uint64, error) {
	return nil, 0, errors.New("followed")
}
func (unfollowable) Replay(context.Context, string, events.ReplayFrom, uint64, func(events.FeedEvent)) error {
	return errors.New("replayed")
}

// TestNewRefusesABadTraceURL: New checks Config.TraceURL before it
// follows the feed.
func TestNewRefusesABadTraceURL(t *testing.T) {
	_, err := dashboard.New(context.Background(), dashboard.Config{Feed: unfollowable{}, TraceURL: "localhost:16686/trace/{trace_id}"})
	if err == nil || !strings.Contains(err.Error(), "trace URL") || !strings.Contains(err.Error(), "localhost:16686") {
		t.Errorf("New with a trace URL without a scheme: err = %v, want one naming the trace URL", err)
	}
}
