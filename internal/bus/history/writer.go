package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/ownership"
	"github.com/agentfleet/agentfleet/internal/retry"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
)

// Writer appends to one session's history, fenced twice. It carries the
// ownership fence of the session's partition, and asks its Checker before
// every attempt whether the fence still holds; and each append expects the
// session's last stream sequence to be the one this writer saw last, so the
// first append of anyone else ends this writer's turn at the store. Either
// fence ends the writer for good (ErrFenced). A Writer is safe for
// concurrent use; appends are serialised.
type Writer struct {
	s       *Store
	subject string
	session string
	by      ownership.Checker
	fence   ownership.Fence

	mu   sync.Mutex
	last uint64
	err  error // sticky: ErrFenced once fenced
}

// Writer returns a writer for the session whose last record has stream
// sequence last (Loaded.LastSeq), writing under fence f of the session's
// partition. Before every attempt it asks by whether f still holds: an
// *ownership.FencedError ends the writer and is returned wrapped in
// ErrFenced; an error that can pass (bus.ErrTemporary: the owner's lease
// is in doubt) makes the append wait and ask again. by must not be nil;
// ownership.Unfenced serves a store that no other process writes.
func (s *Store) Writer(agent, session string, last uint64, by ownership.Checker, f ownership.Fence) *Writer {
	return &Writer{s: s, subject: s.subjects.History(agent, session), session: session, last: last, by: by, fence: f}
}

// Fence returns the ownership fence the writer writes under.
func (w *Writer) Fence() ownership.Fence { return w.fence }

// Append stores one message of run runID and returns its stream sequence.
// Errors that can pass (a server restarting, a lost connection, a timeout)
// are retried with backoff until ctx ends; the append returns only once the
// record is stored, ctx ended, or the writer is fenced.
func (w *Writer) Append(ctx context.Context, runID string, m agentfleet.Message) (uint64, error) {
	return w.AppendTraced(ctx, runID, m, trace.SpanContext{})
}

// AppendTraced is Append for a message that came with the trace context
// sc (a user message sent with a traceparent): the record keeps it, so
// that a run resumed from the history stays in the sender's trace.
func (w *Writer) AppendTraced(ctx context.Context, runID string, m agentfleet.Message, sc trace.SpanContext) (uint64, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("history: encode %s message: %w", m.MessageRole(), err)
	}
	return w.writeTraced(ctx, runID, "", b, sc)
}

// AppendRunEnd records that run runID ended with final.
func (w *Writer) AppendRunEnd(ctx context.Context, runID string, final *agentfleet.AssistantMessage) (uint64, error) {
	b, err := json.Marshal(final)
	if err != nil {
		return 0, fmt.Errorf("history: encode final message: %w", err)
	}
	return w.write(ctx, runID, RecordRunEnd, b)
}

// AppendApproval records that a call of run runID waits for a decision.
func (w *Writer) AppendApproval(ctx context.Context, runID string, req *agentfleet.ApprovalRequest) (uint64, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("history: encode approval request: %w", err)
	}
	return w.write(ctx, runID, RecordApproval, b)
}

// AppendDecision records the decision on a call of run runID that waited.
func (w *Writer) AppendDecision(ctx context.Context, runID string, d *agentfleet.ApprovalDecision) (uint64, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return 0, fmt.Errorf("history: encode approval decision: %w", err)
	}
	return w.write(ctx, runID, RecordDecision, b)
}

// AppendSummary records a summary of the oldest part of the history,
// written during run runID.
func (w *Writer) AppendSummary(ctx context.Context, runID string, sum *agentfleet.ContextSummary) (uint64, error) {
	b, err := json.Marshal(sum)
	if err != nil {
		return 0, fmt.Errorf("history: encode summary: %w", err)
	}
	return w.write(ctx, runID, RecordSummary, b)
}

// Last returns the stream sequence of the last record this writer knows.
func (w *Writer) Last() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Err returns ErrFenced (wrapped) once the writer is fenced, else nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// attemptMax bounds one attempt to store a record.
const attemptMax = 5 * time.Second

// writeRetry is the backoff of a record that could not be stored: a wait
// drawn from [d/2, d], d doubling from 25ms up to 2s, until the context
// ends.
var writeRetry = retry.Policy{Base: 25 * time.Millisecond, Max: 2 * time.Second, Jitter: retry.EqualJitter}

func (w *Writer) write(ctx context.Context, runID, kind string, data []byte) (uint64, error) {
	return w.writeTraced(ctx, runID, kind, data, trace.SpanContext{})
}

func (w *Writer) writeTraced(ctx context.Context, runID, kind string, data []byte, sc trace.SpanContext) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	// One id for every attempt, so that an attempt whose ack was lost is
	// recognised as stored.
	id := uuid.NewString()
	var seq uint64
	err := retry.Do(ctx, writeRetry, func(ctx context.Context, _ int) error {
		if err := context.Cause(ctx); err != nil {
			// The session was suspended: nothing more of it is stored.
			return retry.Permanent(err)
		}
		err := w.by.Check(w.fence)
		switch {
		case errors.Is(err, bus.ErrTemporary):
			// The right to write is in doubt: wait, and ask again.
			return err
		case err != nil:
			return retry.Permanent(fmt.Errorf("%w: session %s: %w", ErrFenced, w.session, err))
		}
		seq, err = w.attempt(ctx, id, runID, kind, data, sc)
		if errors.Is(err, ErrFenced) {
			return retry.Permanent(err)
		}
		return err
	})
	switch {
	case err == nil:
		w.last = seq
		return seq, nil
	case errors.Is(err, ErrFenced):
		w.err = err
		return 0, err
	}
	return 0, fmt.Errorf("history: store record of run %s in session %s: %w", runID, w.session, err)
}

// attempt publishes the record once, conditional on w.last.
func (w *Writer) attempt(ctx context.Context, id, runID, kind string, data []byte, sc trace.SpanContext) (uint64, error) {
	msg := nats.NewMsg(w.subject)
	msg.Data = data
	msg.Header.Set(HeaderRunID, runID)
	if sc.IsValid() {
		tracing.Inject(trace.ContextWithRemoteSpanContext(context.Background(), sc), msg.Header)
	}
	if kind != "" {
		msg.Header.Set(HeaderRecord, kind)
	}
	if w.s.writer != "" {
		msg.Header.Set(HeaderWriter, w.s.writer)
	}
	actx, cancel := context.WithTimeout(ctx, attemptMax)
	defer cancel()
	ack, err := w.s.js.PublishMsg(actx, msg, jetstream.WithMsgID(id), jetstream.WithExpectLastSequencePerSubject(w.last))
	if err == nil {
		return ack.Sequence, nil
	}
	if !isWrongLastSeq(err) {
		return 0, err
	}
	// Either an earlier attempt of this record was stored and its ack lost,
	// or someone else wrote the session: the last record tells which.
	last, gerr := w.s.lastRecord(actx, w.subject)
	if gerr != nil {
		return 0, gerr
	}
	if last.Header.Get(nats.MsgIdHdr) == id {
		return last.Sequence, nil
	}
	return 0, fmt.Errorf("%w: session %s has record %d by %q after the %d this orchestrator saw",
		ErrFenced, w.session, last.Sequence, last.Header.Get(HeaderWriter), w.last)
}

func (s *Store) lastRecord(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	st, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return nil, err
	}
	return st.GetLastMsgForSubject(ctx, subject)
}
