package orchestrator

import (
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/input"
)

func TestPendingBound(t *testing.T) {
	in := func(seq, delivery uint64) *input.Inbound { return &input.Inbound{Seq: seq, Delivery: delivery} }
	tests := []struct {
		name    string
		backlog []*input.Inbound
		want    uint64
	}{
		{"recovery: no delivery, read everything", nil, 0},
		{"a first delivery: read only what came before it", []*input.Inbound{in(42, 1)}, 42},
		{"the first input decides, a later redelivery does not", []*input.Inbound{in(42, 1), in(7, 3)}, 42},
		{"a redelivery may follow a dead owner's deliveries: read everything", []*input.Inbound{in(42, 2)}, 0},
		{"a redelivery first, then a first delivery: read everything", []*input.Inbound{in(42, 2), in(50, 1)}, 0},
		{"core NATS input has no sequence: read everything", []*input.Inbound{in(0, 0), in(42, 1)}, 0},
		{"a sequence without a delivery count: read everything", []*input.Inbound{in(42, 0)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pendingBound(tt.backlog); got != tt.want {
				t.Errorf("pendingBound = %d, want %d", got, tt.want)
			}
		})
	}
}
