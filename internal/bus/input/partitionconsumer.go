package input

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// consumerConfig is the configuration of partition p's consumer.
//
// Its state (what was delivered, what awaits an ack) is kept in the
// servers' memory, not in a file: a file consumer rewrites its state file
// (open, write, rename, and an fsync with sync always) up to ten times a
// second each, 64 consumers of them, for state that the work queue makes
// redundant: an acknowledged message is removed from the stream, which is
// on disk, and every message still in it is delivered again to a consumer
// that starts afresh. A lone server that restarts forgets the consumers
// (those of a cluster are kept by the other servers); restoreConsumers
// creates them again.
func (d *DurableInput) consumerConfig(p int) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable: consumerName(p), Description: "agentfleet: the input of partition " + strconv.Itoa(p),
		FilterSubject: d.in.subjects.StoredPartition(p),
		AckPolicy:     jetstream.AckExplicitPolicy, AckWait: d.cfg.AckWait,
		// Failed handlings are bounded by the orchestrator itself, which
		// says so in an error event; redeliveries after a crash or a
		// handover are not failures, so the server does not count them.
		MaxDeliver:     -1,
		MaxAckPending:  10_000,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		PriorityPolicy: jetstream.PriorityPolicyPinned, PriorityGroups: []string{ownerGroup}, PinnedTTL: d.cfg.PinnedTTL,
		MemoryStorage: true,
	}
}

// ensureConsumer looks partition p's consumer up, and creates it if it is
// missing or updates it if its settings differ. A consumer that exists
// keeps its storage (an earlier release's consumers are in files), since
// JetStream does not change it.
func (d *DurableInput) ensureConsumer(ctx context.Context, p int) (jetstream.Consumer, error) {
	cc := d.consumerConfig(p)
	var cons jetstream.Consumer
	err := bus.RetryJS(ctx, func(ctx context.Context) (err error) {
		// Looked up first: the consumer exists but after the first start,
		// and parallel creates of one consumer can go unanswered.
		cons, err = d.stream.Consumer(ctx, cc.Durable)
		if err == nil {
			have := cons.CachedInfo().Config
			if sameConsumer(have, cc) {
				return nil
			}
			cc.MemoryStorage = have.MemoryStorage
		}
		if err == nil || errors.Is(err, jetstream.ErrConsumerNotFound) {
			cons, err = d.stream.CreateOrUpdateConsumer(ctx, cc)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("input consumer %s: %w", cc.Durable, err)
	}
	return cons, nil
}

// Serve begins consuming partition p: it creates the partition's consumer
// if need be, unpins whoever consumed it before (a deposed owner), and
// consumes it pinned.
func (d *DurableInput) Serve(ctx context.Context, p int) error {
	cons, err := d.ensureConsumer(ctx, p)
	if err != nil {
		return err
	}
	name := consumerName(p)
	if err := d.stream.UnpinConsumer(ctx, name, ownerGroup); err != nil {
		d.log.Debug("unpin input consumer", "consumer", name, "err", err)
	}
	consuming, err := d.consume(cons, name)
	if err != nil {
		return err
	}
	d.mu.Lock()
	old := d.serving[p]
	d.serving[p] = consuming
	d.mu.Unlock()
	if old != nil {
		old.Stop()
	}
	return nil
}

func (d *DurableInput) consume(cons jetstream.Consumer, name string) (jetstream.ConsumeContext, error) {
	consuming, err := cons.Consume(d.receive, jetstream.PullPriorityGroup(ownerGroup), jetstream.PullExpiry(5*time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if errors.Is(err, jetstream.ErrPinIDMismatch) {
				// The pin moved: a handover, and the consumer pulls again.
				d.log.Debug("input consumer", "consumer", name, "err", err)
				return
			}
			d.log.Warn("input consumer", "consumer", name, "err", err)
		}))
	if err != nil {
		return nil, fmt.Errorf("input consumer %s: %w", name, err)
	}
	return consuming, nil
}

// sameConsumer reports whether the server's consumer has the settings that
// Serve gives it (its storage aside: see ensureConsumer).
func sameConsumer(have, want jetstream.ConsumerConfig) bool {
	return have.FilterSubject == want.FilterSubject && have.AckWait == want.AckWait && have.MaxDeliver == want.MaxDeliver &&
		have.MaxAckPending == want.MaxAckPending && have.PriorityPolicy == want.PriorityPolicy && have.PinnedTTL == want.PinnedTTL &&
		have.Description == want.Description
}

// restoreTimeout bounds the restoring of the consumers after a
// reconnection (the server may still be starting JetStream).
const restoreTimeout = 30 * time.Second

// restoreOnReconnect has restoreConsumers run each time nc reconnects, after
// the handler nc had, until Stop.
func (d *DurableInput) restoreOnReconnect(nc *nats.Conn) {
	prev := nc.Opts.ReconnectedCB
	nc.SetReconnectHandler(func(c *nats.Conn) {
		if prev != nil {
			prev(c)
		}
		select {
		case <-d.stop:
			return
		default:
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), restoreTimeout)
			defer cancel()
			d.restoreConsumers(ctx)
		}()
	})
}

// restoreConsumers creates again the consumers of the partitions served
// here that the server no longer has (a lone server that restarted forgets
// memory consumers) and consumes them anew; the messages still in the
// stream are delivered again. A partition given up meanwhile is left alone.
func (d *DurableInput) restoreConsumers(ctx context.Context) {
	d.mu.Lock()
	served := make(map[int]jetstream.ConsumeContext, len(d.serving))
	for p, cc := range d.serving {
		served[p] = cc
	}
	d.mu.Unlock()
	for p, old := range served {
		name := consumerName(p)
		var missing bool
		err := bus.RetryJS(ctx, func(ctx context.Context) error {
			_, err := d.stream.Consumer(ctx, name)
			missing = errors.Is(err, jetstream.ErrConsumerNotFound)
			if missing {
				return nil
			}
			return err
		})
		if err != nil {
			d.log.Warn("input consumer after a reconnection", "consumer", name, "err", err)
			continue
		}
		if !missing {
			continue
		}
		cons, err := d.ensureConsumer(ctx, p)
		if err == nil {
			var consuming jetstream.ConsumeContext
			if consuming, err = d.consume(cons, name); err == nil {
				d.mu.Lock()
				still := d.serving[p] == old
				if still {
					d.serving[p] = consuming
				}
				d.mu.Unlock()
				if still {
					old.Stop()
				} else {
					consuming.Stop() // given up, or served anew, meanwhile
				}
			}
		}
		if err != nil {
			d.log.Warn("input consumer after a reconnection", "consumer", name, "err", err)
			continue
		}
		d.log.Info("input consumer created again after a reconnection", "consumer", name)
	}
}
