package procmem

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReservationFits(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name               string
		total, reserved, n int64
		want               bool
	}{
		{"empty budget takes a call", 256 * mib, 0, 64 * mib, true},
		{"the last call that fits", 256 * mib, 192 * mib, 64 * mib, true},
		{"one call too many", 256 * mib, 224 * mib, 64 * mib, false},
		{"larger than the whole budget", 256 * mib, 0, 257 * mib, false},
		{"nothing always fits", 256 * mib, 256 * mib, 0, true},
		{"hostile: negative size", 256 * mib, 0, -1, false},
		{"hostile: overflowing size", 256 * mib, 1, 1<<63 - 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reservationFits(tc.total, tc.reserved, tc.n); got != tc.want {
				t.Errorf("reservationFits(%d, %d, %d) = %v, want %v", tc.total, tc.reserved, tc.n, got, tc.want)
			}
		})
	}
}

// TestProcessMemory: reservations never exceed the budget; one that does
// not fit is refused at once with an error that says what is full, and
// fits again once a call gives its reservation back; a waiting Reserve
// gets the freed room, and one that can never fit fails at once.
func TestProcessMemory(t *testing.T) {
	m := NewProcessMemory(256 << 20)
	var releases []func()
	for range 4 {
		r, err := m.TryReserve(64 << 20)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, r)
	}
	_, err := m.TryReserve(64 << 20)
	var full *ErrProcessMemoryFull
	if !errors.As(err, &full) || !strings.Contains(err.Error(), "the scripts' process memory budget of 256 MiB is full: 256 MiB reserved by the calls running, and a call needs 64 MiB") {
		t.Fatalf("fifth reservation: %v, want the budget full", err)
	}
	if m.Reserved() != 256<<20 || m.Peak() != 256<<20 || m.Calls(64<<20) != 4 {
		t.Errorf("reserved %d, peak %d, calls %d", m.Reserved(), m.Peak(), m.Calls(64<<20))
	}
	type reserved struct {
		release func()
		err     error
	}
	got := make(chan reserved, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := m.Reserve(ctx, 64<<20)
		got <- reserved{r, err}
	}()
	releases[0]()
	releases[0]() // twice gives back once
	if r := <-got; r.err != nil {
		t.Fatalf("Reserve after a release: %v", r.err)
	} else {
		releases[0] = r.release
	}
	if m.Peak() != 256<<20 {
		t.Errorf("peak %d, want the budget", m.Peak())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Reserve(ctx, 64<<20); err == nil || !strings.Contains(err.Error(), "is full") {
		t.Errorf("Reserve with the budget full and ctx done: %v", err)
	}
	if _, err := m.Reserve(context.Background(), 512<<20); err == nil || !strings.Contains(err.Error(), "is larger than the process budget") {
		t.Errorf("Reserve of more than the budget: %v", err)
	}
	for _, r := range releases {
		r()
	}
	if m.Reserved() != 0 {
		t.Errorf("reserved %d after every release", m.Reserved())
	}
}
