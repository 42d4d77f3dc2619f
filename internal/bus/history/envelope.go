package history

import (
	"encoding/binary"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// An envelope is one stored message that holds several records of a
// session (header Agentfleet-Record: batch), written by one Writer.Flush.
// Its data, version 1:
//
//	version   1 byte, EnvelopeVersion
//	count     uvarint, 2..MaxEnvelopeRecords
//	count times:
//	  kind    uvarint length ≤ maxKindBytes, then the bytes (the
//	          Agentfleet-Record value of a plain record; empty for a message)
//	  run id  uvarint length 1..maxRunIDBytes, then the bytes
//	  trace   1 byte: 0 none, 1 then 16 bytes trace id, 8 bytes span id,
//	          1 byte trace flags
//	  payload uvarint length, then the bytes (the data of a plain record)
//
// Nothing may follow the last record. Every length is checked against the
// bytes that remain before anything is read, and nothing is allocated from a
// declared length or count.
const (
	// RecordBatch is the Agentfleet-Record value of an envelope.
	RecordBatch = "batch"
	// EnvelopeVersion is the version of the envelope encoding written.
	EnvelopeVersion = 1
	// MaxEnvelopeRecords bounds the records of one envelope.
	MaxEnvelopeRecords = 256
	// maxEnvelopeBytes is the size at which a writer's buffer is flushed
	// before it takes another record, well under the server's default
	// max_payload (1 MiB).
	maxEnvelopeBytes = 512 << 10
	maxKindBytes     = 32
	maxRunIDBytes    = 256
	traceBytes       = 16 + 8 + 1
)

// entry is one record as stored: its kind (HeaderRecord, "" for a message),
// run id, trace context and encoded payload.
type entry struct {
	kind  string
	runID string
	trace trace.SpanContext
	data  []byte
}

// size bounds the bytes e takes in an envelope.
func (e *entry) size() int {
	return 3*binary.MaxVarintLen64 + len(e.kind) + len(e.runID) + 1 + traceBytes + len(e.data)
}

// appendEnvelope appends the envelope of es to b and returns it.
func appendEnvelope(b []byte, es []entry) []byte {
	b = append(b, EnvelopeVersion)
	b = binary.AppendUvarint(b, uint64(len(es)))
	for i := range es {
		e := &es[i]
		b = appendBytes(b, e.kind)
		b = appendBytes(b, e.runID)
		if e.trace.IsValid() {
			tid, sid := e.trace.TraceID(), e.trace.SpanID()
			b = append(b, 1)
			b = append(b, tid[:]...)
			b = append(b, sid[:]...)
			b = append(b, byte(e.trace.TraceFlags()))
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(len(e.data)))
		b = append(b, e.data...)
	}
	return b
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// envelopeReader reads an envelope, keeping the offset for its errors.
type envelopeReader struct {
	b   []byte
	off int
}

func (r *envelopeReader) uvarint(field string) (uint64, error) {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		return 0, fmt.Errorf("%s at offset %d: not a varint", field, r.off)
	}
	r.off += n
	return v, nil
}

// bytes reads a length and that many bytes, at most limit; the slice shares
// the envelope's array.
func (r *envelopeReader) bytes(field string, limit int) ([]byte, error) {
	at := r.off
	n, err := r.uvarint(field + " length")
	if err != nil {
		return nil, err
	}
	if left := len(r.b) - r.off; n > uint64(left) {
		return nil, fmt.Errorf("%s at offset %d: length %d exceeds the %d bytes left", field, at, n, left)
	}
	if limit > 0 && n > uint64(limit) {
		return nil, fmt.Errorf("%s at offset %d: length %d exceeds the limit of %d", field, at, n, limit)
	}
	v := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return v, nil
}

// decodeEnvelope reads the records of an envelope. Its error says what is
// wrong and at which offset; the record index is 0-based.
func decodeEnvelope(b []byte) ([]entry, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("envelope is empty")
	}
	if b[0] != EnvelopeVersion {
		return nil, fmt.Errorf("envelope version %d, want %d", b[0], EnvelopeVersion)
	}
	r := &envelopeReader{b: b, off: 1}
	count, err := r.uvarint("record count")
	if err != nil {
		return nil, err
	}
	// A record takes at least 4 bytes: the count cannot exceed what is left.
	if count < 2 || count > MaxEnvelopeRecords || count > uint64(len(b)-r.off)/4 {
		return nil, fmt.Errorf("envelope declares %d records in %d bytes (2 to %d allowed)", count, len(b), MaxEnvelopeRecords)
	}
	es := make([]entry, 0, count)
	for i := range int(count) {
		e, err := r.entry()
		if err != nil {
			return nil, fmt.Errorf("envelope record %d of %d: %w", i, count, err)
		}
		es = append(es, e)
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("envelope has %d bytes after its last record, at offset %d", len(b)-r.off, r.off)
	}
	return es, nil
}

func (r *envelopeReader) entry() (entry, error) {
	var e entry
	kind, err := r.bytes("kind", maxKindBytes)
	if err != nil {
		return e, err
	}
	if string(kind) == RecordBatch {
		return e, fmt.Errorf("kind at offset %d: an envelope inside an envelope", r.off-len(kind))
	}
	runID, err := r.bytes("run id", maxRunIDBytes)
	if err != nil {
		return e, err
	}
	if len(runID) == 0 {
		return e, fmt.Errorf("run id at offset %d is empty", r.off-1)
	}
	e.kind, e.runID = string(kind), string(runID)
	if r.off >= len(r.b) {
		return e, fmt.Errorf("trace flag at offset %d: the envelope ends", r.off)
	}
	switch flag := r.b[r.off]; flag {
	case 0:
		r.off++
	case 1:
		if left := len(r.b) - r.off - 1; left < traceBytes {
			return e, fmt.Errorf("trace at offset %d: %d bytes left, want %d", r.off+1, left, traceBytes)
		}
		t := r.b[r.off+1:]
		var tid trace.TraceID
		var sid trace.SpanID
		copy(tid[:], t[:16])
		copy(sid[:], t[16:24])
		e.trace = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(t[24]), Remote: true})
		if !e.trace.IsValid() {
			return e, fmt.Errorf("trace at offset %d: not a valid trace context", r.off+1)
		}
		r.off += 1 + traceBytes
	default:
		return e, fmt.Errorf("trace flag at offset %d is %d, want 0 or 1", r.off, flag)
	}
	if e.data, err = r.bytes("payload", 0); err != nil {
		return e, err
	}
	return e, nil
}

// A batch holds the records a writer buffered between two flushes: their
// entries, their payloads back to back in one arena, and the envelope
// built of them. Batches are pooled, so that a run's records cost no
// allocation each and an idle session holds none.
type batch struct {
	entries []entry
	arena   []byte
	env     []byte
}

// maxPooledBatch bounds the arena and envelope of a batch put back in the
// pool; a larger one (a run of large records) is left to the collector.
const maxPooledBatch = 64 << 10

var batches = sync.Pool{New: func() any { return &batch{entries: make([]entry, 0, 8)} }}

func newBatch() *batch { return batches.Get().(*batch) }

// release puts b back in the pool. Nothing of it may be used after.
func (b *batch) release() {
	if cap(b.arena) > maxPooledBatch || cap(b.env) > maxPooledBatch || cap(b.entries) > MaxEnvelopeRecords {
		return
	}
	clear(b.entries[:cap(b.entries)]) // no payloads, run ids or spans kept alive
	b.entries, b.arena, b.env = b.entries[:0], b.arena[:0], b.env[:0]
	batches.Put(b)
}
