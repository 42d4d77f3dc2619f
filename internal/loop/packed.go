package loop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/agentfleet/agentfleet"
)

// An idle session keeps its history packed: one byte slice instead of a Go
// value per message, content block and string (a message as structs takes
// two to three times its encoding). The next run, or a reader of the
// history, decodes it. Each message, in history order:
//
//	kind    1 byte: 'u' user, 'a' assistant, 't' tool result
//	run id  uvarint 0: the run of the message before; n > 0: n-1 bytes
//	message uvarint length, then its packed form (packmsg.go)
//
// Only the session reads what it wrote, but the decoder checks every length
// against the bytes that remain all the same.
const (
	packUser      = 'u'
	packAssistant = 'a'
	packTool      = 't'
)

var errUnknownKind = errors.New("not a kind of message")

// packHistory appends the packed form of history, with the run of each
// message, to b. It fails when a message's Details or raw tool_calls have
// no JSON encoding; the session then stays unpacked.
func packHistory(b []byte, history []agentfleet.Message, runOf []string) ([]byte, error) {
	for i, m := range history {
		var kind byte
		switch m.(type) {
		case *agentfleet.UserMessage:
			kind = packUser
		case *agentfleet.AssistantMessage:
			kind = packAssistant
		case *agentfleet.ToolResultMessage:
			kind = packTool
		default:
			return nil, fmt.Errorf("pack history: message %d is a %T", i, m)
		}
		b = append(b, kind)
		if i > 0 && runOf[i] == runOf[i-1] {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(runOf[i]))+1)
			b = append(b, runOf[i]...)
		}
		// The length goes before the message: leave room for the longest
		// uvarint, then move the message up to its length's end.
		at := len(b)
		b = append(b, make([]byte, binary.MaxVarintLen32)...)
		var err error
		b, err = appendPackedMessage(b, runOf[i], m)
		if err != nil {
			return nil, fmt.Errorf("pack history: message %d: %w", i, err)
		}
		n := len(b) - at - binary.MaxVarintLen32
		k := len(binary.AppendUvarint(b[at:at], uint64(n)))
		copy(b[at+k:], b[at+binary.MaxVarintLen32:])
		b = b[:at+k+n]
	}
	return b, nil
}

// unpackHistory decodes what packHistory wrote: the messages and the run of
// each, the messages of one run sharing one run id string.
func unpackHistory(b []byte) ([]agentfleet.Message, []string, error) {
	var (
		history []agentfleet.Message
		runOf   []string
		run     string
	)
	for off := 0; off < len(b); {
		at := off
		kind := b[off]
		off++
		n, k := binary.Uvarint(b[off:])
		if k <= 0 || n > uint64(len(b)-off-k)+1 {
			return nil, nil, fmt.Errorf("unpack history: run id of message %d at offset %d: bad length", len(history), at)
		}
		off += k
		if n > 0 {
			run = string(b[off : off+int(n-1)])
			off += int(n - 1)
		} else if len(history) == 0 {
			return nil, nil, fmt.Errorf("unpack history: message 0 at offset %d refers to a run before it", at)
		}
		n, k = binary.Uvarint(b[off:])
		if k <= 0 || n > uint64(len(b)-off-k) {
			return nil, nil, fmt.Errorf("unpack history: message %d at offset %d: bad length", len(history), at)
		}
		off += k
		data := b[off : off+int(n)]
		off += int(n)
		m, err := unpackMessage(kind, run, data)
		if err != nil {
			return nil, nil, fmt.Errorf("unpack history: message %d at offset %d, kind %q: %w", len(history), at, kind, err)
		}
		history = append(history, m)
		runOf = append(runOf, run)
	}
	return history, runOf, nil
}

// packScratch holds the buffers histories are packed into before the
// session keeps a copy of just their length.
var packScratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPackedMessages bounds the histories that are packed. The next run
// decodes the whole history and packs it again, a few microseconds a
// message: worth it for the many short sessions an orchestrator holds, not
// for a long one, whose runs would pay it for every message it ever had.
const maxPackedMessages = 32

// packLocked packs the history of an idle session, which keeps it as it is
// when it cannot be packed or is longer than maxPackedMessages. Call it with
// s.mu held.
func (s *Session) packLocked() {
	if s.packed != nil || len(s.history) == 0 || len(s.history) > maxPackedMessages {
		return
	}
	scratch := packScratch.Get().(*[]byte)
	defer packScratch.Put(scratch)
	b, err := packHistory((*scratch)[:0], s.history, s.runOf)
	if err != nil {
		return
	}
	*scratch = b
	s.packed = append(make([]byte, 0, len(b)), b...)
	s.history, s.runOf = nil, nil
}

// unpackLocked decodes a packed history into the session for a run. A
// packed history that does not decode is a bug of this file: it panics
// rather than run on without the conversation. Call it with s.mu held.
func (s *Session) unpackLocked() {
	if s.packed == nil {
		return
	}
	history, runOf, err := unpackHistory(s.packed)
	if err != nil {
		panic(err)
	}
	s.history, s.runOf, s.packed = history, runOf, nil
}

// historyLocked returns the history and the run of each message, decoding
// a packed one without keeping what it decoded: a reader of an idle
// session leaves it packed. Call it with s.mu held.
func (s *Session) historyLocked() ([]agentfleet.Message, []string) {
	if s.packed == nil {
		return s.history, s.runOf
	}
	history, runOf, err := unpackHistory(s.packed)
	if err != nil {
		panic(err)
	}
	return history, runOf
}

// PackMessage returns m, a message of run runID, in the packed form of an
// idle session's history: a third to a half of what it takes as Go values.
// It fails for a message whose Details or raw tool_calls have no JSON
// encoding.
func PackMessage(runID string, m agentfleet.Message) ([]byte, error) {
	return packHistory(nil, []agentfleet.Message{m}, []string{runID})
}

// UnpackMessage decodes what PackMessage returned.
func UnpackMessage(b []byte) (agentfleet.Message, error) {
	ms, _, err := unpackHistory(b)
	switch {
	case err != nil:
		return nil, err
	case len(ms) != 1:
		return nil, fmt.Errorf("unpack message: %d messages, want 1", len(ms))
	}
	return ms[0], nil
}
