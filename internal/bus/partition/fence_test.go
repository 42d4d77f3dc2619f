package partition_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
)

// TestFenceOfAHandedOverPartition takes the fences of every partition while
// one member owns them all, and has a second join: the fences of the
// partitions handed over stop holding, with a FencedError naming the new
// owner and its epoch, while those of the partitions kept hold.
func TestFenceOfAHandedOverPartition(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	s := &serving{t: t, by: map[int]string{}, tables: map[string]*partition.Table{}}
	m0, _ := join(t, srv, s, "m0")
	var fences []ownership.Fence
	for p := range 64 {
		f, ok := m0.Fence(p)
		if !ok || f.Owner != "m0" || f.Epoch == 0 {
			t.Fatalf("fence of partition %d = %v, %v; want one of m0's", p, f, ok)
		}
		if err := m0.Check(f); err != nil {
			t.Fatalf("check of the fence of partition %d: %v", p, err)
		}
		fences = append(fences, f)
	}
	m1, _ := join(t, srv, s, "m1")
	bustest.Eventually(t, "the partitions shared", func() bool { n := s.counts(); return n["m0"] == 32 && n["m1"] == 32 })
	kept := 0
	for _, f := range fences {
		err := m0.Check(f)
		if _, owned := m1.Fence(f.Partition); !owned {
			if err != nil {
				t.Errorf("fence %v of a partition m0 kept: %v", f, err)
			}
			kept++
			continue
		}
		var fe *ownership.FencedError
		if !errors.As(err, &fe) {
			t.Fatalf("fence %v after the handover: %v, want a FencedError", f, err)
		}
		// m0 sees m1's claim once its watch has it.
		bustest.Eventually(t, fmt.Sprintf("m0 to see m1's claim of partition %d", f.Partition), func() bool {
			errors.As(m0.Check(f), &fe)
			return fe.Owner == "m1"
		})
		if now, _ := m1.Fence(f.Partition); fe.Epoch != now.Epoch || fe.Epoch <= f.Epoch {
			t.Errorf("FencedError names epoch %d; m1 claimed at %d, after m0's %d", fe.Epoch, now.Epoch, f.Epoch)
		}
		if err := m1.Check(f); err == nil {
			t.Errorf("m1 accepts m0's fence %v", f)
		}
	}
	if kept != 32 {
		t.Errorf("%d fences held, want the 32 of the partitions kept", kept)
	}
}
