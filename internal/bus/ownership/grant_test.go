package ownership_test

import (
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

func TestGrant(t *testing.T) {
	held := ownership.Claim{Self: "a", Held: true, Epoch: 7, Owner: "a", KeyEpoch: 7}
	with := func(mod func(*ownership.Claim)) ownership.Claim {
		c := held
		mod(&c)
		return c
	}
	cases := []struct {
		name    string
		claim   ownership.Claim
		granted bool
	}{
		{name: "held", claim: held, granted: true},
		{name: "held, the key not yet seen", claim: with(func(c *ownership.Claim) { c.Owner, c.KeyEpoch = "", 0 }), granted: true},
		// The member still owns the partition and takes its input: a
		// session that comes into memory now gets a fence that holds
		// again with the lease (it got epoch 0, which never holds).
		{name: "lease in doubt", claim: with(func(c *ownership.Claim) { c.Lease, c.InDoubt = errors.New("in doubt"), true }), granted: true},
		{name: "lease lost", claim: with(func(c *ownership.Claim) { c.Lease = errors.New("lost") }), granted: false},
		{name: "lease lost, still held", claim: with(func(c *ownership.Claim) { c.Lease, c.Held = errors.New("lost"), true }), granted: false},
		{name: "handed over", claim: with(func(c *ownership.Claim) { c.Releasing = true }), granted: false},
		{name: "handed over in doubt", claim: with(func(c *ownership.Claim) { c.Releasing, c.Lease, c.InDoubt = true, errors.New("in doubt"), true }), granted: false},
		{name: "not held", claim: with(func(c *ownership.Claim) { c.Held, c.Epoch, c.Owner, c.KeyEpoch = false, 0, "b", 9 }), granted: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := ownership.Grant(3, tc.claim)
			want := ownership.Fence{Partition: 3, Owner: "a"}
			if tc.granted {
				want.Epoch = tc.claim.Epoch
			}
			if ok != tc.granted || f != want {
				t.Fatalf("Grant = %v, %v; want %v, %v", f, ok, want, tc.granted)
			}
			// A fence granted holds, or waits on a lease in doubt; one
			// refused never holds.
			err := ownership.Check(f, tc.claim)
			var fe *ownership.FencedError
			switch {
			case tc.granted && errors.As(err, &fe):
				t.Errorf("the fence granted does not hold: %v", err)
			case !tc.granted && !errors.As(err, &fe):
				t.Errorf("the fence refused is not fenced: %v", err)
			}
		})
	}
}

func TestOutdated(t *testing.T) {
	now := ownership.Fence{Partition: 3, Owner: "a", Epoch: 9}
	cases := []struct {
		name     string
		held     ownership.Fence
		now      ownership.Fence
		granted  bool
		outdated bool
	}{
		{name: "the fence of the claim", held: now, now: now, granted: true},
		{name: "taken while not owned", held: ownership.Fence{Partition: 3, Owner: "a"}, now: now, granted: true, outdated: true},
		{name: "of an earlier claim", held: ownership.Fence{Partition: 3, Owner: "a", Epoch: 7}, now: now, granted: true, outdated: true},
		{name: "another member's", held: ownership.Fence{Partition: 3, Owner: "b", Epoch: 9}, now: now, granted: true, outdated: true},
		{name: "nothing granted now", held: ownership.Fence{Partition: 3, Owner: "a", Epoch: 7}, now: ownership.Fence{Partition: 3, Owner: "a"}},
		{name: "epoch 0, nothing granted now", held: ownership.Fence{Partition: 3, Owner: "a"}, now: ownership.Fence{Partition: 3, Owner: "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownership.Outdated(tc.held, tc.now, tc.granted); got != tc.outdated {
				t.Errorf("Outdated(%v, %v, %v) = %v, want %v", tc.held, tc.now, tc.granted, got, tc.outdated)
			}
		})
	}
}
