package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/ledger"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go/jetstream"
)

// readStream reads every message of stream on subject filter with an
// ordered consumer, calling each for each.
func readStream(ctx context.Context, js jetstream.JetStream, stream, filter string, each func(jetstream.Msg) error) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s: %w", stream, err)
	}
	total := info.NumPending
	for got := uint64(0); got < total; {
		batch, err := cons.Fetch(int(min(total-got, 1024)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			got++
			if err := each(m); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("read %s: %w", stream, err)
		}
		if n == 0 {
			return fmt.Errorf("read %s: %d of %d messages arrived", stream, got, total)
		}
	}
	return nil
}

// readHistory reads every record of the sessions of agent "default",
// whichever orchestrator wrote it.
func readHistory(ctx context.Context, js jetstream.JetStream) ([]*check.Record, error) {
	prefix := "agent.history." + agentName + "."
	var recs []*check.Record
	err := readStream(ctx, js, historyStream, prefix+">", func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("history record: %w", err)
		}
		r := &check.Record{
			Seq: meta.Sequence.Stream, Time: meta.Timestamp,
			Session: strings.TrimPrefix(m.Subject(), prefix),
			Run:     m.Headers().Get(toolrpc.HeaderRunID), Writer: m.Headers().Get(history.HeaderWriter),
			End: m.Headers().Get(history.HeaderRecord) == history.RecordRunEnd,
		}
		if r.End {
			r.Final = new(agentfleet.AssistantMessage)
			if err := json.Unmarshal(m.Data(), r.Final); err != nil {
				r.Bad = err.Error()
			}
		} else if r.Msg, err = agentfleet.UnmarshalMessage(m.Data()); err != nil {
			r.Bad = err.Error()
		}
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

// readLedger reads every execution of the ledger tool.
func readLedger(ctx context.Context, js jetstream.JetStream) ([]check.LedgerRecord, error) {
	var recs []check.LedgerRecord
	err := readStream(ctx, js, ledger.Stream, ledger.Subject, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("ledger record: %w", err)
		}
		r := check.LedgerRecord{Seq: meta.Sequence.Stream, Call: m.Headers().Get(ledger.HeaderCall), Arg: m.Headers().Get(ledger.HeaderArg)}
		if v := m.Headers().Get(ledger.HeaderFence); v != "" {
			f, err := toolrpc.ParseFence(v)
			if err != nil {
				return fmt.Errorf("ledger record %d: %w", r.Seq, err)
			}
			r.Partition, r.Epoch, r.Owner = f.Partition, f.Epoch, f.Owner
		}
		recs = append(recs, r)
		return nil
	})
	return recs, err
}

// quiesce waits, up to timeout and restarting processes that exit on their
// own, until every message of the plan has a run that ended in the stored
// history. It reports whether that happened; the error says why not.
func (f *fleet) quiesce(ctx context.Context, js jetstream.JetStream, p *check.Plan, timeout time.Duration) (bool, error) {
	since := time.Now()
	missing := -1
	var last time.Time
	err := proc.WaitFor(ctx, timeout, "every message to have a run that ended", func() (bool, error) {
		if err := f.supervise(ctx, since); err != nil {
			return false, err
		}
		if time.Since(last) < 500*time.Millisecond {
			return false, nil
		}
		last = time.Now()
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		recs, err := readHistory(rctx, js)
		cancel()
		if err != nil {
			return false, err
		}
		var done bool
		done, missing = check.Answered(p, recs)
		if !done {
			return false, fmt.Errorf("%d messages have no ended run", missing)
		}
		return true, nil
	})
	if err != nil {
		return false, err
	}
	f.cfg.Logf("chaos: quiesced in %v", time.Since(since).Round(time.Millisecond))
	return true, nil
}
