package erase

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
)

func TestTombstones(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	var ts Tombstones
	ts.Add("default", "s1", 40, now)
	ts.Add("default", "s1", 30, now) // a second stop never lowers it
	ts.Add("default", "s2", 0, now)  // no input stream: nothing to refuse
	for _, tt := range []struct {
		name    string
		session string
		seq     uint64
		at      time.Time
		refused bool
	}{
		{"input stored before the delete", "s1", 12, now, true},
		{"at the stop's sequence", "s1", 40, now, true},
		{"input stored after the delete", "s1", 41, now, false},
		{"input of no stream", "s1", 0, now, false},
		{"another session", "s3", 12, now, false},
		{"a stop without a sequence", "s2", 12, now, false},
		{"past the tombstone's time", "s1", 12, now.Add(TombstoneTTL + time.Second), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ts.Refuses("default", tt.session, tt.seq, tt.at)
			if (err != nil) != tt.refused {
				t.Fatalf("Refuses = %v, want refused %v", err, tt.refused)
			}
			if err != nil && !errors.Is(err, bus.ErrDeleted) {
				t.Errorf("refusal %v does not wrap bus.ErrDeleted", err)
			}
		})
	}
	var nilTS *Tombstones
	nilTS.Add("default", "s1", 3, now)
	if err := nilTS.Refuses("default", "s1", 1, now); err != nil {
		t.Errorf("nil tombstones refuse: %v", err)
	}
	// Old ones go as new ones come.
	ts.Add("default", "s9", 5, now.Add(TombstoneTTL+time.Minute))
	if _, ok := ts.m["default.s1"]; ok {
		t.Error("a tombstone past its time is kept")
	}
}

func TestParseStopRequest(t *testing.T) {
	for _, tt := range []struct {
		body, err string
		seq       uint64
	}{
		{"", "", 0}, {"{}", "", 0}, {`{"input_seq":7}`, "", 7},
		{`{"input_seq":-1}`, "not JSON of {input_seq}", 0},
		{`{"input_seq":1,"x":2}`, "unknown field", 0},
		{`[`, "not JSON", 0},
		{strings.Repeat(" ", 300), "the limit is 256", 0},
	} {
		req, err := ParseStopRequest([]byte(tt.body))
		if tt.err == "" && (err != nil || req.InputSeq != tt.seq) {
			t.Errorf("%q: %+v, %v; want seq %d", tt.body, req, err, tt.seq)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("%q: error %v, want one naming %q", tt.body, err, tt.err)
		}
	}
}
