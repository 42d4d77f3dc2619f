package partition

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A claim reads two kinds of keys, and only one of them needs the stream
// leader:
//
//   - The partition's own key (parts.Get), and this member's key when it
//     joins again (members.Get in register), only feed a compare-and-set
//     write at the revision read (Create, Update, Delete with
//     LastRevision), which the stream leader checks: a stale answer from a
//     follower (KV gets are direct gets, which any replica answers; see
//     nats-server #6557) makes that write fail, never succeed wrongly.
//   - The key of the member that holds a partition decides a takeover by
//     its absence: "its lease is gone, take the partition". A follower that
//     lags behind the owner's registration or renewal answers "not found"
//     for a key that lives, and the compare-and-set on the partition's key
//     that follows would succeed, since that key did not change. So that
//     read goes to the leader (memberGone), through the JetStream API's
//     message get, which only the leader answers, rather than a direct get.

// validMember is what a member id may be to be read as a key: a KV key
// token without wildcards, so that a partition key's value cannot make the
// read match another member's key.
var validMember = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

// msgGetResponse is the JetStream API's answer to STREAM.MSG.GET.
type msgGetResponse struct {
	Message *struct {
		Header []byte `json:"hdrs,omitempty"`
	} `json:"message"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// errNoMessage is the API's err_code for a stream without the message.
const errNoMessage = 10037

// memberGone reports, as the members stream's leader knows it, whether the
// key of member id is gone (never written, expired with its lease, or
// deleted): then the partitions it holds may be taken over.
func (t *Table) memberGone(ctx context.Context, id string) (bool, error) {
	if !validMember.MatchString(id) || id[0] == '.' || id[len(id)-1] == '.' {
		return false, fmt.Errorf("partition: the owner %q of a partition key is not a member id", id)
	}
	bucket := t.members.Bucket()
	prefix := t.js.Options().APIPrefix
	if prefix == "" {
		prefix = jetstream.DefaultAPIPrefix
	}
	if !strings.HasSuffix(prefix, ".") {
		prefix += "."
	}
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + id})
	m, err := t.js.Conn().RequestWithContext(ctx, prefix+"STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return false, fmt.Errorf("partition: reading member %s from the leader: %w", id, err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return false, fmt.Errorf("partition: reading member %s from the leader: %w", id, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == errNoMessage:
		return true, nil
	case resp.Error != nil:
		return false, fmt.Errorf("partition: reading member %s from the leader: %s (code %d, %d)", id, resp.Error.Description, resp.Error.Code, resp.Error.ErrCode)
	case resp.Message == nil:
		return false, errors.New("partition: reading member " + id + " from the leader: an answer without message")
	}
	if len(resp.Message.Header) == 0 {
		return false, nil
	}
	h, err := nats.DecodeHeadersMsg(resp.Message.Header)
	if err != nil {
		return false, fmt.Errorf("partition: reading member %s from the leader: headers: %w", id, err)
	}
	switch h.Get("KV-Operation") {
	case "DEL", "PURGE":
		return true, nil
	}
	// A subject delete marker (a key whose TTL ended) says so too.
	return h.Get("Nats-Marker-Reason") != "", nil
}
