package input

import (
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A relayed ask is stored on the condition that no other input of its
// session is in the input stream (JetStream's expected last sequence per
// subject, 0, checked against the subject filter of every stored input of
// the session: Nats-Expected-Last-Subject-Sequence-Subject). The stream keeps
// the two headers on the message it stored, so its delivery proves what the
// server checked: a session loaded for it need not read the session's stored
// input before it (DurableInput.PendingBefore), one request a load spared.
// The input stream is a work queue, so a session whose earlier input was
// all acknowledged passes too. When the condition fails (the session has
// input waiting), the ask is stored again without it.
const (
	headerExpectedLastSubjSeq     = "Nats-Expected-Last-Subject-Sequence"
	headerExpectedLastSubjSeqSubj = "Nats-Expected-Last-Subject-Sequence-Subject"
)

// expectFirst sets on h the condition that no input of the session whose
// stored subjects storedSession matches is in the stream.
func expectFirst(h nats.Header, storedSession string) {
	h[headerExpectedLastSubjSeq] = []string{"0"}
	h[headerExpectedLastSubjSeqSubj] = []string{storedSession}
}

// storedFirst reports whether a stored message of headers h was stored on
// the condition expectFirst sets, for the session whose stored subjects
// storedSession matches: exactly that condition, so that a client's own
// expectation on another subject, or on another sequence, proves nothing.
func storedFirst(h nats.Header, storedSession string) bool {
	seq, subj := h[headerExpectedLastSubjSeq], h[headerExpectedLastSubjSeqSubj]
	return len(seq) == 1 && seq[0] == "0" && len(subj) == 1 && subj[0] == storedSession
}

// notFirst reports whether err is the stream's refusal of a store whose
// condition did not hold: another message of the session is in the stream.
func notFirst(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
