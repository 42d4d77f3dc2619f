package toolrpc

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

// TestDecideFence is the worker's decision on a call's fence given what it
// remembers of the partition: a newer epoch accepts and is remembered, the
// same accepts, an older one refuses, and so does the same epoch from
// another owner; a partition not seen for the TTL is as if never seen.
func TestDecideFence(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	ttl := time.Hour
	known := seenFence{epoch: 7, owner: "b", at: now.Add(-time.Minute)}
	for _, tc := range []struct {
		name   string
		known  seenFence
		ok     bool
		got    ownership.Fence
		want   fenceVerdict
		accept bool
	}{
		{"first call of a partition", seenFence{}, false, ownership.Fence{Partition: 1, Owner: "a", Epoch: 3}, fenceFirst, true},
		{"newer epoch", known, true, ownership.Fence{Partition: 1, Owner: "c", Epoch: 9}, fenceNewer, true},
		{"newer epoch, same owner (claimed again)", known, true, ownership.Fence{Partition: 1, Owner: "b", Epoch: 8}, fenceNewer, true},
		{"same epoch and owner", known, true, ownership.Fence{Partition: 1, Owner: "b", Epoch: 7}, fenceSame, true},
		{"older epoch", known, true, ownership.Fence{Partition: 1, Owner: "a", Epoch: 6}, fenceOlder, false},
		{"older epoch of the same owner", known, true, ownership.Fence{Partition: 1, Owner: "b", Epoch: 1}, fenceOlder, false},
		{"same epoch, another owner", known, true, ownership.Fence{Partition: 1, Owner: "a", Epoch: 7}, fenceConflict, false},
		{"older epoch after the TTL", seenFence{epoch: 7, owner: "b", at: now.Add(-ttl)}, true, ownership.Fence{Partition: 1, Owner: "a", Epoch: 6}, fenceFirst, true},
		{"older epoch just within the TTL", seenFence{epoch: 7, owner: "b", at: now.Add(-ttl + time.Millisecond)}, true, ownership.Fence{Partition: 1, Owner: "a", Epoch: 6}, fenceOlder, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := decideFence(tc.known, tc.ok, tc.got, now, ttl)
			if v != tc.want {
				t.Errorf("decideFence = %d, want %d", v, tc.want)
			}
			if got := v.accepts(); got != tc.accept {
				t.Errorf("accepts = %v, want %v", got, tc.accept)
			}
		})
	}
}

// TestFencesAdmit drives the worker's memory: an accepted epoch raises the
// bar for the partition only, a refusal names both claims and matches
// ErrFenced, and the memory stays within its bound, dropping the partition
// seen longest ago.
func TestFencesAdmit(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	fs := newFences(time.Hour, 2)
	step := func(f ownership.Fence, wantErr bool) {
		t.Helper()
		now = now.Add(time.Second)
		err := fs.admit(f, now)
		if (err != nil) != wantErr {
			t.Fatalf("admit(%v) = %v, want error %v", f, err, wantErr)
		}
		if err != nil && !errors.Is(err, ErrFenced) {
			t.Fatalf("admit(%v) = %v, which is not ErrFenced", f, err)
		}
	}
	step(ownership.Fence{Partition: 1, Owner: "a", Epoch: 5}, false)
	step(ownership.Fence{Partition: 1, Owner: "b", Epoch: 9}, false)
	step(ownership.Fence{Partition: 1, Owner: "a", Epoch: 5}, true)
	step(ownership.Fence{Partition: 2, Owner: "a", Epoch: 5}, false) // another partition
	err := fs.admit(ownership.Fence{Partition: 1, Owner: "a", Epoch: 5}, now)
	for _, want := range []string{`epoch 5`, `owner "a"`, `epoch 9, owner "b"`, "did not run"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v does not say %q", err, want)
		}
	}
	// A third partition makes room by dropping partition 1, seen longest
	// ago; partition 2 is kept.
	step(ownership.Fence{Partition: 3, Owner: "a", Epoch: 1}, false)
	if got := len(fs.seen); got != 2 {
		t.Errorf("%d partitions remembered, want at most 2", got)
	}
	step(ownership.Fence{Partition: 2, Owner: "z", Epoch: 4}, true)
}

// TestParseFence reads the header's values back and refuses garbage with
// an error naming the header and what is wrong.
func TestParseFence(t *testing.T) {
	good := ownership.Fence{Partition: 12, Owner: "0b6c3d0e-orch.a", Epoch: 4711}
	if v := FormatFence(good); v != "12.4711.0b6c3d0e-orch.a" {
		t.Errorf("FormatFence = %q", v)
	}
	if got, err := ParseFence(FormatFence(good)); err != nil || got != good {
		t.Errorf("ParseFence(FormatFence(f)) = %v, %v, want %v", got, err, good)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"no dot", "garbage", "no '.' after the partition"},
		{"no epoch", "3.", "no '.' after the epoch"},
		{"partition not a number", "x.1.o", `partition "x"`},
		{"negative partition", "-1.1.o", `partition "-1"`},
		{"partition too large", "4294967296.1.o", `partition "4294967296"`},
		{"epoch zero", "1.0.o", `epoch "0"`},
		{"epoch not a number", "1.1e3.o", `epoch "1e3"`},
		{"epoch overflows", "1.18446744073709551616.o", `epoch "18446744073709551616"`},
		{"no owner", "1.1.", "the owner is empty"},
		{"owner with a control character", "1.1.a\tb", "not one line"},
		{"oversized", "1.1." + strings.Repeat("o", 300), "304 bytes, more than 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFence(tc.value)
			if err == nil {
				t.Fatalf("ParseFence(%q) = nil error", tc.value)
			}
			if !strings.Contains(err.Error(), HeaderFence) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFence(%q) = %v, want it to name %s and say %q", tc.value, err, HeaderFence, tc.want)
			}
		})
	}
}
