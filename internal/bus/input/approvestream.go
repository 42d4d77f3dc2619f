package input

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// The bounds of the approval decisions stream: whatever is published on the
// approve subjects is kept, garbage too, so it is kept for a day at most, a
// few per session, none larger than a decision may be (the server refuses a
// larger one), and the oldest give way.
const (
	// ApproveMaxAge is how long a decision stays in the approve stream.
	// The input stream takes a copy within moments, whether an
	// orchestrator is up or not; this copy is only the capture.
	ApproveMaxAge = 24 * time.Hour
	// ApproveMaxPerSession is how many decisions of one session the
	// approve stream keeps.
	ApproveMaxPerSession = 64
	// ApproveMaxMsgSize bounds one stored decision, headers included.
	ApproveMaxMsgSize = MaxDecisionBytes + 16<<10
)

// SetupApproveStream creates (or updates) the stream that captures every
// approval decision as it is published on <prefix>.approve.<agent>.<session>,
// whether an orchestrator is up or not. It does not acknowledge what it
// stores (no_ack): a decision sent as a request is answered by the session's
// owner alone. The input stream sources it (ApproveSource), so that each
// decision reaches the owner of its session's partition, once one is up.
func SetupApproveStream(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects, cfg DurableConfig) error {
	cfg.defaults()
	name := subjects.StreamName("APPROVE")
	_, err := bus.EnsureStream(ctx, js, jetstream.StreamConfig{
		Name: name, Description: "agentfleet approval decisions as published, taken into the input stream",
		Subjects: []string{subjects.ClientWildcard(bus.KindApprove)}, NoAck: true, Storage: jetstream.FileStorage,
		MaxAge: ApproveMaxAge, MaxMsgsPerSubject: ApproveMaxPerSession, MaxMsgSize: ApproveMaxMsgSize,
		Discard: jetstream.DiscardOld, Duplicates: cfg.DuplicateWindow, Replicas: cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("approve stream %s: %w", name, err)
	}
	return nil
}

// ApproveSource is the input stream's source of the approve stream: each
// decision stored under its session's partition, kind approve.
func ApproveSource(subjects bus.Subjects) *jetstream.StreamSource {
	src, dest := subjects.ApproveTransform()
	return &jetstream.StreamSource{
		Name:              subjects.StreamName("APPROVE"),
		SubjectTransforms: []jetstream.SubjectTransformConfig{{Source: src, Destination: dest}},
	}
}
