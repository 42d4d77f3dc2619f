package dashboard

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// TraceIDPlaceholder is what a trace URL template holds where the page
// puts a run's trace id.
const TraceIDPlaceholder = "{trace_id}"

// CheckTraceURL reports whether s is a usable trace URL template: an
// absolute http or https URL holding TraceIDPlaceholder, such as
// http://localhost:16686/trace/{trace_id} for Jaeger. The empty string is
// fine (no links). The error says what is wrong with s; the caller names
// the flag it came from.
func CheckTraceURL(s string) error {
	if s == "" {
		return nil
	}
	if !strings.Contains(s, TraceIDPlaceholder) {
		return fmt.Errorf("%q holds no %s for the page to replace with a run's trace id", s, TraceIDPlaceholder)
	}
	// A trace id is 32 hex digits: the URL must parse with one in place.
	u, err := url.Parse(strings.ReplaceAll(s, TraceIDPlaceholder, strings.Repeat("0", 32)))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q is not a URL: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http or https URL", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL with a host, such as http://localhost:16686/trace/%s", s, TraceIDPlaceholder)
	}
	return nil
}
