package ownership_test

import (
	"errors"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/ownership"
)

func TestCheck(t *testing.T) {
	lost := errors.New("lease lost")
	doubt := errors.New("lease in doubt")
	f := ownership.Fence{Partition: 3, Owner: "a", Epoch: 7}
	held := ownership.Claim{Self: "a", Held: true, Epoch: 7, Owner: "a", KeyEpoch: 7}
	with := func(mod func(*ownership.Claim)) ownership.Claim {
		c := held
		mod(&c)
		return c
	}
	cases := []struct {
		name   string
		fence  ownership.Fence
		claim  ownership.Claim
		holds  bool
		passes bool   // the error can pass: not a FencedError
		owner  string // the current owner the FencedError names
		epoch  uint64
		reason error
	}{
		{name: "held at its epoch", fence: f, claim: held, holds: true},
		{name: "held while handed over", fence: f, claim: with(func(c *ownership.Claim) { c.Owner = "" }), holds: true},
		{name: "lease in doubt", fence: f, claim: with(func(c *ownership.Claim) { c.Lease, c.InDoubt = doubt, true }), passes: true},
		{name: "lease lost", fence: f, claim: with(func(c *ownership.Claim) { c.Lease, c.Held = lost, false }), owner: "a", epoch: 7, reason: lost},
		{name: "handed over to another", fence: f, claim: with(func(c *ownership.Claim) { c.Held, c.Owner, c.KeyEpoch = false, "b", 9 }), owner: "b", epoch: 9},
		{name: "claimed again at a later epoch", fence: f, claim: with(func(c *ownership.Claim) { c.Epoch, c.KeyEpoch = 8, 8 }), owner: "a", epoch: 8},
		{name: "not held, no key", fence: f, claim: with(func(c *ownership.Claim) { c.Held, c.Owner, c.KeyEpoch = false, "", 0 })},
		{name: "another member's fence", fence: ownership.Fence{Partition: 3, Owner: "b", Epoch: 7}, claim: held, owner: "a", epoch: 7},
		{name: "the zero epoch", fence: ownership.Fence{Partition: 3, Owner: "a"}, claim: held, owner: "a", epoch: 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := ownership.Check(tc.fence, tc.claim)
			if tc.holds {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var fe *ownership.FencedError
			if tc.passes {
				if err == nil || errors.As(err, &fe) {
					t.Fatalf("Check = %v, want the lease's own error", err)
				}
				return
			}
			if !errors.As(err, &fe) || !errors.Is(err, ownership.ErrFenced) {
				t.Fatalf("Check = %v, want a *FencedError", err)
			}
			if fe.Fence != tc.fence || fe.Owner != tc.owner || fe.Epoch != tc.epoch || fe.Reason != tc.reason {
				t.Errorf("FencedError = %+v, want fence %v owner %q epoch %d reason %v", *fe, tc.fence, tc.owner, tc.epoch, tc.reason)
			}
		})
	}
}
