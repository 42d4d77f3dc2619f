package server

import (
	"strings"
	"testing"
	"time"
)

func TestParseSync(t *testing.T) {
	cases := []struct {
		name, in string
		want     Sync
		always   bool
		err      string
	}{
		{name: "empty is the default", in: "", want: SyncAlways, always: true},
		{name: "always", in: "always", want: SyncAlways, always: true},
		{name: "always any case and spaces", in: " ALWAYS ", want: SyncAlways, always: true},
		{name: "nats-server default", in: "2m", want: Sync{Interval: 2 * time.Minute}},
		{name: "short", in: "500ms", want: Sync{Interval: 500 * time.Millisecond}},
		{name: "zero", in: "0s", err: `sync "0s": a duration must be positive`},
		{name: "negative", in: "-1s", err: `sync "-1s": a duration must be positive`},
		{name: "garbage", in: "sometimes", err: `sync "sometimes": want "always" or a duration`},
		{name: "number without unit", in: "120", err: `sync "120": want "always" or a duration`},
		{name: "oversized", in: strings.Repeat("9", 400) + "h", err: `want "always" or a duration`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSync(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ParseSync(%q) error %v, want one containing %q", c.in, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSync(%q): %v", c.in, err)
			}
			if got != c.want || got.Always() != c.always {
				t.Errorf("ParseSync(%q) = %+v (always %v), want %+v (always %v)", c.in, got, got.Always(), c.want, c.always)
			}
			if back, err := ParseSync(got.String()); err != nil || back != got {
				t.Errorf("ParseSync(%q.String() = %q) = %+v, %v; want it back", c.in, got.String(), back, err)
			}
		})
	}
}
