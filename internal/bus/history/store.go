// Package history keeps the conversation of every session in a JetStream
// stream, on <prefix>.history.<agent>.<session>, and is the one place that
// writes it: each stored message is one record, or an envelope of several
// that a Writer buffered and flushed together (envelope.go); Load and Decode
// read both. Every append is conditional on the last
// stream sequence its writer saw for the session (JetStream's
// Nats-Expected-Last-Subject-Sequence), so that an orchestrator that was
// deposed, paused or partitioned cannot write a session another one has
// taken: its append fails with ErrFenced at the server. Before that, every
// append carries the ownership fence of the session's partition
// (ownership.Fence) and is refused unless it still holds, so that an owner
// that handed the partition over writes nothing more even before the next
// owner wrote.
//
// Its concern is the session histories in JetStream and their fenced writer.
// It imports the NATS client and JetStream, internal/bus for the connection
// and subjects, internal/bus/ownership for the fence, internal/tracing and the agentfleet root types; never the
// agent core (internal/loop, internal/pipeline) nor the orchestrator.
package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of history records.
const (
	// HeaderRecord says what a record is: absent for a message, RecordRunEnd
	// for the end of a run, RecordApproval and RecordDecision for a call
	// that waits for approval and its decision; RecordBatch for an
	// envelope of several records.
	HeaderRecord = "Agentfleet-Record"
	// HeaderWriter names the orchestrator instance that wrote the record.
	HeaderWriter = "Agentfleet-Writer"
	// HeaderRunID names the run a record belongs to.
	HeaderRunID = toolrpc.HeaderRunID
	// RecordRunEnd marks the end of a run; its data is the final message.
	RecordRunEnd = "run_end"
	// RecordApproval is a tool call that waits for a person's decision;
	// its data is the agentfleet.ApprovalRequest.
	RecordApproval = "approval"
	// RecordDecision is the decision on a call that waited (a person's, or
	// the deadline's); its data is the agentfleet.ApprovalDecision. It is
	// stored before the call runs or gets its error result.
	RecordDecision = "decision"
	// RecordSummary is a summary of the oldest part of the history (the
	// summarize context strategy); its data is the
	// agentfleet.ContextSummary. The last one is the one in use.
	RecordSummary = "summary"
	// RecordHandoff is a handoff of the session to another agent (a
	// transfer_to_<agent> tool call); its data is the Handoff. The last
	// one names the agent that serves the session.
	RecordHandoff = "handoff"
)

// Config configures the history stream. The zero value means the documented
// defaults.
type Config struct {
	// MaxAge and MaxBytes bound the stream as a whole: past them its
	// oldest messages go first, whatever their session; default none.
	MaxAge   time.Duration
	MaxBytes int64
	// Replicas of the stream; default 1.
	Replicas int
	// Duplicates is the window in which a retried append (same record id)
	// is recognised; default 2m.
	Duplicates time.Duration
}

// Store is the history stream of one prefix.
type Store struct {
	js       jetstream.JetStream
	str      jetstream.Stream // for direct gets
	subjects bus.Subjects
	stream   string
	writer   string
	replies  *replies // of the appends and the direct gets
	direct   bool     // the stream allows direct gets (created before it did: not)
}

// StreamName returns the name of the history stream of subjects' prefix.
func StreamName(subjects bus.Subjects) string { return subjects.StreamName("HISTORY") }

// Open creates (or updates) the history stream. writer names this process
// in the records it writes (header Agentfleet-Writer); it may be empty for a
// store that only reads.
func Open(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects, writer string, cfg Config) (*Store, error) {
	if cfg.Duplicates <= 0 {
		cfg.Duplicates = 2 * time.Minute
	}
	name := StreamName(subjects)
	str, err := bus.EnsureStream(ctx, js, jetstream.StreamConfig{
		Name:        name,
		Description: "agentfleet session histories",
		Subjects:    []string{subjects.Prefix + ".history.>"},
		Storage:     jetstream.FileStorage,
		MaxAge:      cfg.MaxAge,
		MaxBytes:    cfg.MaxBytes,
		Replicas:    max(cfg.Replicas, 1),
		Duplicates:  cfg.Duplicates,
		AllowDirect: true,
	})
	if err != nil {
		return nil, fmt.Errorf("history stream %s: %w", name, err)
	}
	return newStore(js, str, subjects, writer), nil
}

// ErrFenced is returned by a Writer whose session was appended to by someone
// else since the writer last saw it, or whose ownership fence no longer
// holds (then it also wraps the *ownership.FencedError).
var ErrFenced = errors.New("history: the session is written by another orchestrator")

// isWrongLastSeq reports whether err is JetStream's answer to a conditional
// publish whose expected last sequence did not hold.
func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// Attach returns the history stream of subjects' prefix for reading, as it
// is: unlike Open it neither creates nor updates the stream, so a reader
// (agentctl history) leaves the orchestrators' configuration alone. It
// fails when the stream does not exist.
func Attach(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects) (*Store, error) {
	name := StreamName(subjects)
	str, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("history stream %s: %w", name, err)
	}
	return newStore(js, str, subjects, ""), nil
}

func newStore(js jetstream.JetStream, str jetstream.Stream, subjects bus.Subjects, writer string) *Store {
	return &Store{
		js: js, str: str, subjects: subjects, stream: StreamName(subjects), writer: writer,
		replies: &replies{nc: js.Conn(), stream: StreamName(subjects)},
		direct:  str.CachedInfo().Config.AllowDirect,
	}
}
