package bus

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxHeaderValue bounds every header value the fleet writes, in bytes.
// Values come from error texts, tool call ids chosen by a model and the
// like; a value that is longer is cut (at a character boundary) and ends
// with "…".
const MaxHeaderValue = 1024

// HeaderValue makes s fit a NATS header value: one line (every control
// character, CR and LF among them, becomes a space, so that a value cannot
// end the header or add one of its own), valid UTF-8 (invalid bytes become
// U+FFFD) and at most MaxHeaderValue bytes, without surrounding spaces.
func HeaderValue(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= utf8.RuneSelf {
			clean = false
			break
		}
	}
	if clean && len(s) <= MaxHeaderValue && strings.TrimSpace(s) == s {
		return s // the common case: plain ASCII, nothing to copy
	}
	var b strings.Builder
	b.Grow(min(len(s), MaxHeaderValue))
	cut := false
	for _, r := range s { // an invalid byte comes as U+FFFD
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > MaxHeaderValue {
			cut = true
			break
		}
		b.WriteRune(r)
	}
	out := b.String()
	if cut {
		end := MaxHeaderValue - len("…")
		for !utf8.RuneStart(out[end]) {
			end--
		}
		out = out[:end] + "…"
	}
	return strings.TrimSpace(out)
}
