package input

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// legacyConsumer is the one input consumer of the releases before the
// stream was partitioned.
const legacyConsumer = "orchestrator"

// migrate moves an input stream of an earlier release to partitions: it
// deletes the single consumer (a work-queue stream allows no overlapping
// consumers), and stores every message still under its unpartitioned
// subject again, through the subject transform, in order, before deleting
// it. A message keeps the id the old consumer gave it (its Nats-Msg-Id, or
// js-<sequence>), and the copies carry Nats-Msg-Id migrate-<sequence>, so
// that two orchestrators migrating at once store each message once.
func (d *DurableInput) migrate(ctx context.Context) error {
	err := bus.RetryJS(ctx, func(ctx context.Context) error {
		// Looked up first: a delete goes through the cluster's meta leader.
		_, err := d.stream.Consumer(ctx, legacyConsumer)
		if err == nil {
			err = d.stream.DeleteConsumer(ctx, legacyConsumer)
		}
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("input stream: remove the consumer of an earlier release: %w", err)
	}
	old := d.in.subjects.Prefix + ".*.*.*"
	var info *jetstream.StreamInfo
	err = bus.RetryJS(ctx, func(ctx context.Context) (err error) {
		info, err = d.stream.Info(ctx, jetstream.WithSubjectFilter(old))
		return err
	})
	if err != nil {
		return fmt.Errorf("input stream: %w", err)
	}
	if len(info.State.Subjects) == 0 {
		return nil
	}
	moved := 0
	for seq := uint64(1); ; {
		m, err := d.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(old))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("input stream: migrate: %w", err)
		}
		if m.Sequence < seq {
			return fmt.Errorf("input stream: migrate: the stream answered sequence %d for the next message from %d", m.Sequence, seq)
		}
		seq = m.Sequence + 1
		// The client's headers only: a direct get adds the stored
		// message's Nats-Stream, Nats-Sequence, Nats-Subject and
		// Nats-Time-Stamp, which a copy must not carry.
		h := nats.Header{}
		for k, v := range m.Header {
			if !strings.HasPrefix(k, "Nats-") || k == nats.MsgIdHdr {
				h[k] = v
			}
		}
		id := h.Get(nats.MsgIdHdr)
		if id == "" {
			id = "js-" + strconv.FormatUint(m.Sequence, 10)
		}
		h.Del(nats.MsgIdHdr)
		h.Set(HeaderMsgID, id)
		h.Set(nats.MsgIdHdr, "migrate-"+strconv.FormatUint(m.Sequence, 10))
		if _, err := d.js.PublishMsg(ctx, &nats.Msg{Subject: m.Subject, Header: h, Data: m.Data}); err != nil {
			return fmt.Errorf("input stream: migrate message %d: %w", m.Sequence, err)
		}
		if err := d.stream.DeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return fmt.Errorf("input stream: migrate message %d: %w", m.Sequence, err)
		}
		moved++
	}
	d.log.Info(fmt.Sprintf("input stream: %d messages of an earlier release moved to their partitions", moved), "messages", moved)
	return nil
}
