package puback

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestParse reads the answers a stream gives to a publish, and broken ones:
// each is the PubAck or the error jetstream's PublishMsg gives, whether the
// template path or the JSON one reads it.
func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, data string
		status     string
		seq        uint64
		dup        bool
		domain     string
		err        error
		code       jetstream.ErrorCode
		substr     string
	}{
		{name: "template", data: `{"stream":"S","seq":42}`, seq: 42},
		{name: "largest sequence", data: `{"stream":"S","seq":18446744073709551615}`, seq: 18446744073709551615},
		{name: "sequence past uint64", data: `{"stream":"S","seq":18446744073709551616}`, substr: "acknowledgement"},
		{name: "with a space", data: `{"stream":"S", "seq":7}`, seq: 7},
		{name: "duplicate", data: `{"stream":"S","seq":7,"duplicate":true}`, seq: 7, dup: true},
		{name: "domain", data: `{"stream":"S","domain":"hub","seq":9}`, seq: 9, domain: "hub"},
		{name: "another stream", data: `{"stream":"T","seq":3}`, seq: 3},
		{name: "refused", data: `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"S","seq":0}`, code: jetstream.JSErrCodeStreamWrongLastSequence},
		{name: "no responders", status: "503", err: jetstream.ErrNoStreamResponse},
		{name: "empty sequence", data: `{"stream":"S","seq":}`, substr: "acknowledgement"},
		{name: "leading zero", data: `{"stream":"S","seq":042}`, substr: "acknowledgement"},
		{name: "negative sequence", data: `{"stream":"S","seq":-1}`, substr: "acknowledgement"},
		{name: "garbage", data: `nope`, substr: `acknowledgement "nope"`},
		{name: "nameless", data: `{"seq":1}`, substr: "names no stream"},
		{name: "truncated", data: `{"stream":"S","seq":4`, substr: "acknowledgement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &nats.Msg{Data: []byte(c.data)}
			if c.status != "" {
				m.Header = nats.Header{"Status": {c.status}}
			}
			ack, err := Parse(m, "S")
			switch {
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
			case c.code != 0:
				var apiErr *jetstream.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode != c.code {
					t.Fatalf("err %v, want API error %d", err, c.code)
				}
			case c.substr != "":
				if err == nil || !strings.Contains(err.Error(), c.substr) {
					t.Fatalf("err %v, want one with %q", err, c.substr)
				}
			case err != nil:
				t.Fatal(err)
			default:
				var want jetstream.PubAck
				if err := json.Unmarshal([]byte(c.data), &want); err != nil {
					t.Fatal(err)
				}
				if *ack != want || ack.Sequence != c.seq || ack.Duplicate != c.dup || ack.Domain != c.domain {
					t.Fatalf("read %+v, want %+v", ack, want)
				}
			}
		})
	}
}

// FuzzParse checks that the template path reads an answer as JSON does.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"stream":"S","seq":42}`))
	f.Add([]byte(`{"stream":"S","seq":0042}`))
	f.Add([]byte(`{"stream":"S","seq":1e3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, ok := plain(data, "S")
		if !ok {
			return
		}
		var want jetstream.PubAck
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("%q: template path read %d, JSON refuses it: %v", data, seq, err)
		}
		if want.Stream != "S" || want.Sequence != seq {
			t.Fatalf("%q: template path read %d, JSON %+v", data, seq, want)
		}
	})
}

// BenchmarkParse reads the template answer, and a duplicate's (JSON).
func BenchmarkParse(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"template", `{"stream":"AGENT_HISTORY","seq":123456}`},
		{"json", `{"stream":"AGENT_HISTORY","seq":123456,"duplicate":true}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := &nats.Msg{Data: []byte(c.data)}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(m, "AGENT_HISTORY"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
