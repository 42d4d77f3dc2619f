package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tracing"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"
)

// Record is one stored entry of a session: a message of a run, or the end of
// a run with its final message.
type Record struct {
	// Seq is the stream sequence of the stored message that holds the
	// record; Index its place in that message: 0 for a plain record, 0 to
	// n-1 for the n records of an envelope (RecordBatch). Seq and Index
	// together name a record.
	Seq   uint64
	Index int
	// RunID names the run the record belongs to.
	RunID string
	// Writer names the orchestrator that wrote it ("" for records written
	// before writers were named).
	Writer string
	// Message is the user, assistant or tool result message; nil for the
	// end of a run.
	Message agentfleet.Message
	// Final is the final message of an end record; nil otherwise.
	Final *agentfleet.AssistantMessage
	// Approval is a call that waits for a decision; Decision the decision
	// on one. Nil for other records.
	Approval *agentfleet.ApprovalRequest
	Decision *agentfleet.ApprovalDecision
	// Summary is the summary of a summary record; nil otherwise.
	Summary *agentfleet.ContextSummary
	// Handoff is the handoff of a handoff record; nil otherwise.
	Handoff *Handoff
	// Forked is what a fork copied, in the forked record it wrote; nil
	// otherwise.
	Forked *Forked
	// Retained is the cut of a retained record (retained.go); nil
	// otherwise.
	Retained *Retained
	// Trace is the trace context a user message was sent with, if it
	// came with one (Writer.AppendTraced).
	Trace trace.SpanContext
	// Size is the bytes of the record's payload as stored; Stored when its
	// stored message was stored (set by Load, zero from Decode).
	Size   int
	Stored time.Time
}

// Skipped is a record that could not be decoded: Seq names its stored
// message, Index its place in an envelope (0 for a plain record, -1 when
// the envelope itself did not decode, and every record of it is skipped).
type Skipped struct {
	Seq   uint64
	Index int
	Err   error
}

// Loaded is a session's history as stored.
type Loaded struct {
	Records []Record
	// Skipped lists the records that did not decode; they are left out of
	// Records, and the session goes on without them.
	Skipped []Skipped
	// LastSeq is the stream sequence of the session's last record, skipped
	// ones included (0 if it has none): the sequence a Writer expects.
	LastSeq uint64
	// RetainedFrom is the FirstSeq of the last retained record (0: none);
	// Hidden counts the records before it that the stream still held and
	// that Load left out, for a purge still to be made.
	RetainedFrom uint64
	Hidden       int
}

// directRecords is how many records Load reads with direct gets (one
// request each, no server state) before it reads the rest of a long
// history with a consumer.
const directRecords = 64

// Load replays a session's records. A session never stored loads empty.
// It leaves nothing on the server: the first records come from direct gets,
// and the consumer that reads a long history's rest is deleted after it.
func (s *Store) Load(ctx context.Context, agent, session string) (*Loaded, error) {
	st := &Loaded{}
	subject := s.subjects.History(agent, session)
	seq := uint64(1)
	for range directRecords {
		m, err := s.nextBySubject(ctx, subject, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			st.applyRetained()
			return st, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history: load session %s: %w", session, err)
		}
		if m.Sequence < seq {
			return nil, fmt.Errorf("history: load session %s: the stream answered sequence %d for the next record from %d", session, m.Sequence, seq)
		}
		seq = m.Sequence + 1
		st.addRecord(m.Sequence, m.Time, m.Header, m.Data)
	}
	if err := s.loadRest(ctx, st, subject, session, seq); err != nil {
		return nil, err
	}
	st.applyRetained()
	return st, nil
}

// loadRest reads a long history's records from sequence from on, with an
// ordered consumer that it deletes when done.
func (s *Store) loadRest(ctx context.Context, st *Loaded, subject, session string, from uint64) error {
	cons, err := s.js.OrderedConsumer(ctx, s.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from,
		InactiveThreshold: 30 * time.Second, // if the delete below is lost
	})
	if err != nil {
		return fmt.Errorf("history: load session %s: %w", session, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.js.DeleteConsumer(dctx, s.stream, cons.CachedInfo().Name)
	}()
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("history: load session %s: %w", session, err)
	}
	total := info.NumPending
	wait := 5 * time.Second
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, max(time.Until(d), 10*time.Millisecond))
	}
	for got := uint64(0); got < total; {
		batch, err := cons.Fetch(int(min(total-got, 512)), jetstream.FetchMaxWait(wait))
		if err != nil {
			return fmt.Errorf("history: load session %s: %w", session, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			got++
			st.add(m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("history: load session %s: %w", session, err)
		}
		if n == 0 {
			return fmt.Errorf("history: load session %s: %d of %d records arrived", session, got, total)
		}
	}
	return nil
}

func (st *Loaded) add(m jetstream.Msg) {
	meta, err := m.Metadata()
	if err != nil {
		st.Skipped = append(st.Skipped, Skipped{Err: fmt.Errorf("record without metadata: %w", err)})
		return
	}
	st.addRecord(meta.Sequence.Stream, meta.Timestamp, m.Headers(), m.Data())
}

func (st *Loaded) addRecord(seq uint64, at time.Time, h nats.Header, data []byte) {
	st.LastSeq = seq
	recs, skipped := Decode(seq, h, data)
	for i := range recs {
		recs[i].Stored = at
	}
	st.Records = append(st.Records, recs...)
	st.Skipped = append(st.Skipped, skipped...)
}

// Decode turns one stored message of a session's history (its stream
// sequence seq, headers h and data) into its records: one for a plain
// record, several for an envelope (RecordBatch). A record that does not
// decode is returned as Skipped, its error naming the sequence, the place
// in the envelope and what is wrong; an envelope that does not decode is one
// Skipped with Index -1. Readers of the raw stream use it, so that they read
// envelopes as Load does.
func Decode(seq uint64, h nats.Header, data []byte) ([]Record, []Skipped) {
	writer := h.Get(HeaderWriter)
	kind := h.Get(HeaderRecord)
	if kind != RecordBatch {
		r, err := decode(place{seq: seq}, h.Get(HeaderRunID), kind, data)
		if err != nil {
			return nil, []Skipped{{Seq: seq, Err: err}}
		}
		r.Seq, r.Writer, r.Size = seq, writer, len(data)
		if _, ok := r.Message.(*agentfleet.UserMessage); ok {
			r.Trace = tracing.Remote(h)
		}
		return []Record{r}, nil
	}
	es, err := decodeEnvelope(data)
	if err != nil {
		return nil, []Skipped{{Seq: seq, Index: -1, Err: fmt.Errorf("history record %d: %w", seq, err)}}
	}
	var (
		recs    = make([]Record, 0, len(es))
		skipped []Skipped
	)
	for i, e := range es {
		r, err := decode(place{seq: seq, index: i, of: len(es)}, e.runID, e.kind, e.data)
		if err != nil {
			skipped = append(skipped, Skipped{Seq: seq, Index: i, Err: err})
			continue
		}
		r.Seq, r.Index, r.Writer, r.Size = seq, i, writer, len(e.data)
		if _, ok := r.Message.(*agentfleet.UserMessage); ok {
			r.Trace = e.trace
		}
		recs = append(recs, r)
	}
	return recs, skipped
}

// place names a record in its errors: the stream sequence of its stored
// message, and its index among the of records of an envelope.
type place struct {
	seq       uint64
	index, of int
}

func (p place) String() string {
	if p.of == 0 {
		return fmt.Sprintf("history record %d", p.seq)
	}
	return fmt.Sprintf("history record %d (entry %d of %d of its envelope)", p.seq, p.index, p.of)
}

// decode turns one stored record into a Record; its error begins with
// where, which names the record, and says what is wrong with it.
func decode(where place, runID, kind string, data []byte) (Record, error) {
	r := Record{RunID: runID}
	if runID == "" {
		return r, fmt.Errorf("%s has no %s header", where, HeaderRunID)
	}
	switch kind {
	case RecordRunEnd:
		var final agentfleet.AssistantMessage
		if err := json.Unmarshal(data, &final); err != nil {
			return r, fmt.Errorf("%s (end of run %s): %w", where, runID, err)
		}
		r.Final = &final
	case RecordApproval:
		var a agentfleet.ApprovalRequest
		if err := json.Unmarshal(data, &a); err != nil || a.ToolCallID == "" {
			return r, fmt.Errorf("%s (approval request of run %s): %w", where, runID, errors.Join(err, errNoCallID(a.ToolCallID)))
		}
		r.Approval = &a
	case RecordDecision:
		var d agentfleet.ApprovalDecision
		if err := json.Unmarshal(data, &d); err != nil || d.ToolCallID == "" {
			return r, fmt.Errorf("%s (approval decision of run %s): %w", where, runID, errors.Join(err, errNoCallID(d.ToolCallID)))
		}
		r.Decision = &d
	case RecordSummary:
		var sum agentfleet.ContextSummary
		if err := json.Unmarshal(data, &sum); err != nil || sum.Covers <= 0 {
			return r, fmt.Errorf("%s (summary of run %s): %w", where, runID, errors.Join(err, errNoCovers(sum.Covers)))
		}
		r.Summary = &sum
	case RecordHandoff:
		var h Handoff
		if err := json.Unmarshal(data, &h); err != nil || h.To == "" {
			return r, fmt.Errorf("%s (handoff of run %s): %w", where, runID, errors.Join(err, errNoTarget(h.To)))
		}
		r.Handoff = &h
	case RecordForked:
		var f Forked
		if err := json.Unmarshal(data, &f); err != nil || f.Source == "" {
			return r, fmt.Errorf("%s (forked record of run %s): %w", where, runID, errors.Join(err, errNoSource(f.Source)))
		}
		r.Forked = &f
	case RecordRetained:
		var k Retained
		if err := json.Unmarshal(data, &k); err != nil {
			return r, fmt.Errorf("%s (retained record of run %s): %w", where, runID, err)
		}
		r.Retained = &k
	case "", "message":
		m, err := agentfleet.UnmarshalMessage(data)
		if err != nil {
			return r, fmt.Errorf("%s (run %s): %w", where, runID, err)
		}
		r.Message = m
	default:
		return r, fmt.Errorf("%s: unknown %s %q", where, HeaderRecord, kind)
	}
	return r, nil
}

func errNoTarget(to string) error {
	if to == "" {
		return errors.New("names no agent to hand over to")
	}
	return nil
}

func errNoSource(src string) error {
	if src == "" {
		return errors.New("names no source session")
	}
	return nil
}

func errNoCovers(n int) error {
	if n <= 0 {
		return fmt.Errorf("covers %d messages", n)
	}
	return nil
}

func errNoCallID(id string) error {
	if id == "" {
		return errors.New("no tool_call_id")
	}
	return nil
}

// Messages returns the messages of the records, in order.
func (st *Loaded) Messages() []agentfleet.Message {
	var out []agentfleet.Message
	for _, r := range st.Records {
		if r.Message != nil {
			out = append(out, r.Message)
		}
	}
	return out
}

// Ended returns the runs that have an end record, with the number of end
// records each has (one, unless something is wrong).
func (st *Loaded) Ended() map[string]int {
	out := map[string]int{}
	for _, r := range st.Records {
		if r.Final != nil {
			out[r.RunID]++
		}
	}
	return out
}
