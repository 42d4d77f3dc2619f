package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// directGetPrefix is JetStream's direct get API of a stream (the stores use
// jetstream.New's default API prefix, no domain).
const directGetPrefix = "$JS.API.DIRECT.GET."

// directTimeout bounds one direct get when its context has no sooner end
// (jetstream's default timeout).
const directTimeout = 5 * time.Second

// nextBySubject reads the stream's first message on subject at or after
// sequence seq: jetstream.ErrMsgNotFound when there is none. It is one
// direct get, its request written by hand and its answer taken on the
// store's own inbox (replies), where jetstream's GetMsg marshals the request
// with reflection and makes a context and a response inbox for each; a
// stream that does not allow direct gets is read with GetMsg.
func (s *Store) nextBySubject(ctx context.Context, subject string, seq uint64) (*jetstream.RawStreamMsg, error) {
	if !s.direct {
		return s.str.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
	}
	m, err := s.replies.request(ctx, &nats.Msg{Subject: directGetPrefix + s.stream, Data: nextRequest(seq, subject)}, directTimeout)
	if err != nil {
		return nil, err
	}
	return parseDirect(m)
}

// nextRequest is the direct get request {"seq":seq,"next_by_subj":subject}.
func nextRequest(seq uint64, subject string) []byte {
	b := make([]byte, 0, len(`{"seq":,"next_by_subj":""}`)+20+len(subject))
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"next_by_subj":`...)
	if plainSubject(subject) {
		b = append(append(append(b, '"'), subject...), '"')
	} else {
		q, _ := json.Marshal(subject) // a string always marshals
		b = append(b, q...)
	}
	return append(b, '}')
}

// plainSubject reports whether subject needs no escaping in a JSON string:
// printable ASCII without quote or backslash.
func plainSubject(subject string) bool {
	for i := 0; i < len(subject); i++ {
		if c := subject[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// parseDirect reads a direct get's answer as jetstream's GetMsg does: a
// status without data is 404 (jetstream.ErrMsgNotFound), 503 (no stream
// answered: jetstream.ErrNoStreamResponse) or another refusal; a message
// carries its stream, sequence, subject and time in Nats-* headers beside
// its own.
func parseDirect(m *nats.Msg) (*jetstream.RawStreamMsg, error) {
	if len(m.Data) == 0 {
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404":
			return nil, jetstream.ErrMsgNotFound
		case "503":
			return nil, jetstream.ErrNoStreamResponse
		default:
			desc := m.Header.Get("Description")
			if desc == "" {
				desc = "unable to get message"
			}
			return nil, fmt.Errorf("history: direct get: status %s: %s", status, desc)
		}
	}
	if m.Header.Get(jetstream.StreamHeader) == "" {
		return nil, errors.New("history: direct get: an answer without the Nats-Stream header")
	}
	seq, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("history: direct get: header %s: %w", jetstream.SequenceHeader, err)
	}
	at, err := time.Parse(time.RFC3339Nano, m.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("history: direct get: header %s: %w", jetstream.TimeStampHeaer, err)
	}
	subject := m.Header.Get(jetstream.SubjectHeader)
	if subject == "" {
		return nil, fmt.Errorf("history: direct get: an answer without the %s header", jetstream.SubjectHeader)
	}
	return &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Header: m.Header, Data: m.Data, Time: at}, nil
}
