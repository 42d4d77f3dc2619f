// Package puback reads JetStream's answer to a publish, for the stores that
// publish on their own reply subscriptions instead of jetstream's
// PublishMsg (internal/bus/history, internal/bus/input's relay).
package puback

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Parse reads m, the answer of the stream named stream to a publish, as
// jetstream's PublishMsg would: the PubAck, an *jetstream.APIError for the
// stream's refusal, jetstream.ErrNoStreamResponse when no stream took the
// subject (a 503 status), or an error naming what is wrong with the answer.
//
// The server writes a stored message's answer from a template,
// {"stream":"<name>","seq":<n>}; that answer is read by hand, its Stream
// the string given. Any other (a duplicate, a refusal, a domain) is read as
// JSON.
func Parse(m *nats.Msg, stream string) (*jetstream.PubAck, error) {
	if seq, ok := plain(m.Data, stream); ok {
		return &jetstream.PubAck{Stream: stream, Sequence: seq}, nil
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, jetstream.ErrNoStreamResponse
	}
	var resp struct {
		jetstream.PubAck
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, fmt.Errorf("the stream's acknowledgement %.64q: %w", m.Data, err)
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	if resp.Stream == "" {
		return nil, errors.New("an acknowledgement that names no stream")
	}
	return &resp.PubAck, nil
}

// plain reads the sequence of data when it is exactly the server's template
// answer of stream: {"stream":"<stream>","seq":<digits>}.
func plain(data []byte, stream string) (uint64, bool) {
	const head, mid = `{"stream":"`, `","seq":`
	n := len(head) + len(stream) + len(mid)
	if stream == "" || len(data) < n+2 || data[len(data)-1] != '}' ||
		string(data[:len(head)]) != head ||
		string(data[len(head):len(head)+len(stream)]) != stream ||
		string(data[len(head)+len(stream):n]) != mid {
		return 0, false
	}
	digits := data[n : len(data)-1]
	if len(digits) > 1 && digits[0] == '0' { // not JSON; the template never writes it
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseUint(string(digits), 10, 64)
	return seq, err == nil
}
