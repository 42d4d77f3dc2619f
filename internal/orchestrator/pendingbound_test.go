package orchestrator

import (
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/input"
)

func TestPendingBound(t *testing.T) {
	in := func(seq, delivery uint64) *input.Inbound { return &input.Inbound{Seq: seq, Delivery: delivery} }
	first := func(seq, delivery uint64) *input.Inbound {
		return &input.Inbound{Seq: seq, Delivery: delivery, First: true}
	}
	tests := []struct {
		name    string
		backlog []*input.Inbound
		want    uint64
		noRead  bool
	}{
		{"recovery: no delivery, read everything", nil, 0, false},
		{"a first delivery: read only what came before it", []*input.Inbound{in(42, 1)}, 42, false},
		{"the first input decides, a later redelivery does not", []*input.Inbound{in(42, 1), in(7, 3)}, 42, false},
		{"a redelivery may follow a dead owner's deliveries: read everything", []*input.Inbound{in(42, 2)}, 0, false},
		{"a redelivery first, then a first delivery: read everything", []*input.Inbound{in(42, 2), in(50, 1)}, 0, false},
		{"core NATS input has no sequence: read everything", []*input.Inbound{in(0, 0), in(42, 1)}, 0, false},
		{"a sequence without a delivery count: read everything", []*input.Inbound{in(42, 0)}, 0, false},
		{"a first delivery stored as the session's only input: read nothing", []*input.Inbound{first(42, 1), in(50, 1)}, 42, true},
		{"a redelivery stored as the only input: read everything, a later input may wait for a dead owner", []*input.Inbound{first(42, 2)}, 0, false},
		{"only the first input decides", []*input.Inbound{in(42, 1), first(50, 1)}, 42, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, read := pendingBound(tt.backlog); got != tt.want || read == tt.noRead {
				t.Errorf("pendingBound = %d, read %v; want %d, read %v", got, read, tt.want, !tt.noRead)
			}
		})
	}
}
