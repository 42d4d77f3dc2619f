package main

import (
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/input"
)

// TestStreamLimitFlags parses the stream-wide bounds: their defaults
// (input 7 days, the rest none), values given, 0 for no bound, and a
// clear error naming the flag for a negative or bad one.
// TestStreamLimits (internal/bus/input) checks that they reach the
// streams.
func TestStreamLimitFlags(t *testing.T) {
	for _, c := range []struct {
		name            string
		args            []string
		inAge, histAge  time.Duration
		inBytes, hBytes int64
		err             string
	}{
		{name: "defaults", inAge: input.DefaultInputMaxAge},
		{name: "given", args: []string{"--input-max-age", "24h", "--input-max-bytes", "1000000", "--history-max-age", "720h", "--history-max-bytes", "5000000"},
			inAge: 24 * time.Hour, inBytes: 1e6, histAge: 720 * time.Hour, hBytes: 5e6},
		{name: "input forever", args: []string{"--input-max-age", "0"}, inAge: -1},
		{name: "negative age", args: []string{"--history-max-age", "-1h"}, err: "--history-max-age -1h0m0s: must not be negative"},
		{name: "negative bytes", args: []string{"--input-max-bytes", "-5"}, err: "--input-max-bytes -5: must not be negative"},
		{name: "negative history bytes", args: []string{"--history-max-bytes", "-1"}, err: "--history-max-bytes -1: must not be negative"},
		{name: "negative input age", args: []string{"--input-max-age", "-1s"}, err: "--input-max-age -1s: must not be negative"},
		{name: "garbage", args: []string{"--input-max-age", "a week"}, err: "input-max-age"},
		{name: "oversized", args: []string{"--history-max-bytes", strings.Repeat("9", 5000)}, err: "history-max-bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMain()
			m.Stderr = new(strings.Builder)
			err := m.ParseFlags(c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%v: err = %v, want %q", c.args, err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := m.Streams
			if s.InputMaxAge != c.inAge || s.InputMaxBytes != c.inBytes || s.HistoryMaxAge != c.histAge || s.HistoryMaxBytes != c.hBytes {
				t.Errorf("%v: input %s %d, history %s %d", c.args, s.InputMaxAge, s.InputMaxBytes, s.HistoryMaxAge, s.HistoryMaxBytes)
			}
		})
	}
}
