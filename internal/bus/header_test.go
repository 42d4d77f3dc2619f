package bus

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeaderValue(t *testing.T) {
	long := strings.Repeat("é", MaxHeaderValue) // 2 bytes each
	tests := []struct {
		name, in, want string
	}{
		{"plain", "tool error", "tool error"},
		{"newlines", "line one\r\nNats-Service-Error-Code: 200\nx", "line one  Nats-Service-Error-Code: 200 x"},
		{"controls", "a\x00b\tc\x7fd", "a b c d"},
		{"invalid UTF-8", "bad \xff\xfe byte", "bad \uFFFD\uFFFD byte"},
		{"surrounding space", "  x  ", "x"},
		{"line separator", "a\u2028b", "a b"},
		{"long", long, long[:MaxHeaderValue-4] + "…"},
		{"exactly the bound", strings.Repeat("x", MaxHeaderValue), strings.Repeat("x", MaxHeaderValue)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := HeaderValue(tt.in)
			if got != tt.want {
				t.Errorf("HeaderValue(%.40q…) = %.60q…, want %.60q…", tt.in, got, tt.want)
			}
			if len(got) > MaxHeaderValue || !utf8.ValidString(got) || strings.ContainsAny(got, "\r\n") {
				t.Errorf("%.40q: not one valid line within %d bytes", got, MaxHeaderValue)
			}
		})
	}
}

func FuzzHeaderValue(f *testing.F) {
	f.Add("a\r\nb")
	f.Add(strings.Repeat("\xff", 2000))
	f.Fuzz(func(t *testing.T, s string) {
		got := HeaderValue(s)
		if len(got) > MaxHeaderValue || !utf8.ValidString(got) || strings.ContainsAny(got, "\r\n\x00") {
			t.Errorf("HeaderValue(%q) = %q", s, got)
		}
	})
}
