package history

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
//
// Records may wait in the writer's buffer (Buffer) and be stored together by
// the next Flush, as one stored message: one record alone is stored as a
// plain record, several as an envelope (RecordBatch). The Append methods
// buffer their record and flush.
type Writer struct {
	s       *Store
	subject string
	session string
	by      ownership.Checker
	fence   ownership.Fence

	mu      sync.Mutex
	last    uint64
	err     error  // sticky: ErrFenced once fenced
	b       *batch // records waiting for the next flush; nil when none
	bufSize int    // what they take in an envelope, at most
	// stored and storedBytes count the records this writer stored and
	// their payloads' bytes (Stored).
	stored, storedBytes int
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
// record is stored, ctx ended, or the writer is fenced. Records buffered
// before it are stored with it, in one stored message.
func (w *Writer) Append(ctx context.Context, runID string, m agentfleet.Message) (uint64, error) {
	return w.AppendTraced(ctx, runID, m, trace.SpanContext{})
}

// AppendTraced is Append for a message that came with the trace context
// sc (a user message sent with a traceparent): the record keeps it, so
// that a run resumed from the history stays in the sender's trace.
func (w *Writer) AppendTraced(ctx context.Context, runID string, m agentfleet.Message, sc trace.SpanContext) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Message: m, Trace: sc})
}

// AppendRunEnd records that run runID ended with final.
func (w *Writer) AppendRunEnd(ctx context.Context, runID string, final *agentfleet.AssistantMessage) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Final: final})
}

// AppendApproval records that a call of run runID waits for a decision.
func (w *Writer) AppendApproval(ctx context.Context, runID string, req *agentfleet.ApprovalRequest) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Approval: req})
}

// AppendDecision records the decision on a call of run runID that waited.
func (w *Writer) AppendDecision(ctx context.Context, runID string, d *agentfleet.ApprovalDecision) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Decision: d})
}

// AppendSummary records a summary of the oldest part of the history,
// written during run runID.
func (w *Writer) AppendSummary(ctx context.Context, runID string, sum *agentfleet.ContextSummary) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Summary: sum})
}

// AppendHandoff records that the session is handed over (during run runID)
// to the agent h names, with the records that wait in the buffer.
func (w *Writer) AppendHandoff(ctx context.Context, runID string, h *Handoff) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Handoff: h})
}

func (w *Writer) appendFlush(ctx context.Context, r Record) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.bufferLocked(ctx, r); err != nil {
		return 0, err
	}
	return w.flushLocked(ctx)
}

// Buffer adds record r (its RunID, and one of Message with its Trace, Final,
// Approval, Decision, Summary, Handoff, Forked or Retained; Seq, Index and Writer are ignored) to the
// records waiting for the next Flush. It stores nothing, unless the buffer
// is full (MaxEnvelopeRecords, or half a megabyte): then what waits is
// flushed first, and an error is that flush's. A fenced writer buffers
// nothing and returns ErrFenced.
func (w *Writer) Buffer(ctx context.Context, r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bufferLocked(ctx, r)
}

// Buffered returns how many records wait for the next Flush.
func (w *Writer) Buffered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buffered()
}

// buffered is how many records wait; w.mu held.
func (w *Writer) buffered() int {
	if w.b == nil {
		return 0
	}
	return len(w.b.entries)
}

// Flush stores the records that wait in the buffer as one stored message,
// conditional on the last sequence this writer saw, and returns its stream
// sequence (Last, with nothing buffered). It retries as Append does; on
// ErrFenced the buffer is dropped, for nothing of it may be stored.
func (w *Writer) Flush(ctx context.Context) (uint64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked(ctx)
}

func (w *Writer) bufferLocked(ctx context.Context, r Record) error {
	if w.err != nil {
		return w.err
	}
	if w.b == nil {
		w.b = newBatch()
	}
	e, arena, err := encodeRecord(r, w.b.arena)
	if err != nil {
		return err
	}
	w.b.arena = arena
	if n := w.buffered(); n > 0 && (n >= MaxEnvelopeRecords || w.bufSize+e.size() > maxEnvelopeBytes) {
		// The record's payload stays in the arena, which the flush
		// leaves to the writer: e.data is still good after it.
		if _, err := w.flushLockedKeep(ctx); err != nil {
			return err
		}
		if w.b == nil {
			w.b = newBatch()
		}
	}
	w.b.entries = append(w.b.entries, e)
	w.bufSize += e.size()
	return nil
}

// encodeRecord turns r into its stored kind and payload, appended to arena
// (e.data is the part of the returned arena that holds it).
func encodeRecord(r Record, arena []byte) (entry, []byte, error) {
	e := entry{runID: r.RunID}
	var v any
	switch {
	case r.Message != nil:
		v, e.trace = r.Message, r.Trace
	case r.Final != nil:
		v, e.kind = r.Final, RecordRunEnd
	case r.Approval != nil:
		v, e.kind = r.Approval, RecordApproval
	case r.Decision != nil:
		v, e.kind = r.Decision, RecordDecision
	case r.Summary != nil:
		v, e.kind = r.Summary, RecordSummary
	case r.Handoff != nil:
		v, e.kind = r.Handoff, RecordHandoff
	case r.Forked != nil:
		v, e.kind = r.Forked, RecordForked
	case r.Retained != nil:
		v, e.kind = r.Retained, RecordRetained
	default:
		return e, arena, fmt.Errorf("history: record of run %s holds nothing to store", r.RunID)
	}
	if r.RunID == "" || len(r.RunID) > maxRunIDBytes {
		return e, arena, fmt.Errorf("history: %s: run id of %d bytes (1 to %d allowed)", r.what(), len(r.RunID), maxRunIDBytes)
	}
	start := len(arena)
	var err error
	if m, ok := v.(agentfleet.Message); ok {
		arena, err = agentfleet.AppendMessageJSON(arena, m) // Marshal's bytes, without its reflection
	} else {
		var b []byte
		if b, err = json.Marshal(v); err == nil {
			arena = append(arena, b...)
		}
	}
	if err != nil {
		return e, arena[:start], fmt.Errorf("history: encode %s: %w", r.what(), err)
	}
	e.data = arena[start:len(arena):len(arena)]
	return e, arena, nil
}

// what names r's content for an error; only errors pay for the string.
func (r Record) what() string {
	switch {
	case r.Message != nil:
		return r.Message.MessageRole() + " message"
	case r.Final != nil:
		return "final message"
	case r.Approval != nil:
		return "approval request"
	case r.Decision != nil:
		return "approval decision"
	case r.Handoff != nil:
		return "handoff"
	case r.Forked != nil:
		return "forked record"
	case r.Retained != nil:
		return "retained record"
	default:
		return "summary"
	}
}

// Last returns the stream sequence of the last record this writer knows.
func (w *Writer) Last() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Stored returns how many records this writer stored, and their payloads'
// bytes (Record.Size): with what a load found, how long the session's
// history is now.
func (w *Writer) Stored() (records, bytes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stored, w.storedBytes
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

func (w *Writer) flushLocked(ctx context.Context) (uint64, error) {
	seq, err := w.flushLockedKeep(ctx)
	if w.buffered() == 0 && w.b != nil {
		w.b.release()
		w.b = nil
	}
	return seq, err
}

// flushLockedKeep is flushLocked leaving the emptied batch, and its arena,
// to the writer.
func (w *Writer) flushLockedKeep(ctx context.Context) (uint64, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.buffered() == 0 {
		return w.last, nil
	}
	msg := w.message()
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
		seq, err = w.attempt(ctx, id, msg)
		if errors.Is(err, ErrFenced) {
			return retry.Permanent(err)
		}
		return err
	})
	switch {
	case err == nil:
		w.last = seq
		for i := range w.b.entries {
			w.stored++
			w.storedBytes += len(w.b.entries[i].data)
		}
		w.drop()
		return seq, nil
	case errors.Is(err, ErrFenced):
		w.err = err
		w.drop()
		return 0, err
	}
	return 0, fmt.Errorf("history: store %d records of session %s: %w", w.buffered(), w.session, err)
}

// drop empties the buffer. The batch goes back to its pool when the flush
// is over (flushLocked): an idle session holds nothing of its last flush.
func (w *Writer) drop() {
	w.b.entries, w.bufSize = w.b.entries[:0], 0
}

// message is the stored message of what the buffer holds: the record alone
// if it is one, else an envelope.
func (w *Writer) message() *nats.Msg {
	msg := nats.NewMsg(w.subject)
	if w.s.writer != "" {
		msg.Header.Set(HeaderWriter, w.s.writer)
	}
	if len(w.b.entries) == 1 {
		e := &w.b.entries[0]
		msg.Data = e.data
		msg.Header.Set(HeaderRunID, e.runID)
		if e.trace.IsValid() {
			tracing.Inject(trace.ContextWithRemoteSpanContext(context.Background(), e.trace), msg.Header)
		}
		if e.kind != "" {
			msg.Header.Set(HeaderRecord, e.kind)
		}
		return msg
	}
	w.b.env = appendEnvelope(slices.Grow(w.b.env[:0], w.bufSize+binary.MaxVarintLen64+1), w.b.entries)
	msg.Data = w.b.env
	msg.Header.Set(HeaderRecord, RecordBatch)
	return msg
}

// attempt publishes msg once, conditional on w.last.
func (w *Writer) attempt(ctx context.Context, id string, msg *nats.Msg) (uint64, error) {
	msg.Header[jetstream.MsgIDHeader] = []string{id}
	msg.Header[jetstream.ExpectedLastSubjSeqHeader] = []string{strconv.FormatUint(w.last, 10)}
	ack, err := w.s.replies.publish(ctx, msg, attemptMax)
	if err == nil {
		return ack.Sequence, nil
	}
	if !isWrongLastSeq(err) {
		return 0, err
	}
	// Either an earlier attempt of this record was stored and its ack lost,
	// or someone else wrote the session: the last record tells which.
	actx, cancel := attemptContext(ctx)
	defer cancel()
	last, gerr := w.s.lastRecord(actx, w.subject)
	if errors.Is(gerr, jetstream.ErrMsgNotFound) {
		// The session holds nothing, though this writer saw a record:
		// it was deleted (purged) since.
		return 0, fmt.Errorf("%w: session %s holds no record since the %d this orchestrator saw: it was deleted",
			ErrFenced, w.session, w.last)
	}
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

// attemptContext returns the context of one attempt: it ends after
// attemptMax, or when ctx ends, with ctx's cause. It is not a child of ctx:
// a child, even one cancelled since, leaves ctx (a session's, which lives
// as long as the session) holding a map of children for good; a goroutine
// that lives no longer than the attempt watches ctx instead.
func attemptContext(ctx context.Context) (context.Context, context.CancelFunc) {
	base, end := context.WithCancelCause(context.WithoutCancel(ctx))
	actx, cancel := context.WithTimeout(base, attemptMax)
	if done := ctx.Done(); done != nil {
		go func() {
			select {
			case <-done:
				end(context.Cause(ctx))
			case <-actx.Done():
			}
		}()
	}
	return actx, func() { cancel(); end(nil) }
}
