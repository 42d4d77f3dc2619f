package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/ledger"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go"
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
	return readHistoryOf(ctx, js, agentName)
}

// readHistoryOf reads every record of the sessions of agent.
func readHistoryOf(ctx context.Context, js jetstream.JetStream, agent string) ([]*check.Record, error) {
	prefix := "agent.history." + agent + "."
	var recs []*check.Record
	err := readStream(ctx, js, historyStream, prefix+">", func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("history record: %w", err)
		}
		session := strings.TrimPrefix(m.Subject(), prefix)
		recs = append(recs, checkRecords(meta.Sequence.Stream, meta.Timestamp, session, m.Headers(), m.Data())...)
		return nil
	})
	return recs, err
}

// checkRecords turns one stored message of a session's history into the
// records it holds (several for an envelope), decoded as the orchestrator
// decodes them (history.Decode). A record that does not decode, or is not a
// message nor a run end, is kept with Bad saying why.
func checkRecords(seq uint64, at time.Time, session string, h nats.Header, data []byte) []*check.Record {
	decoded, skipped := history.Decode(seq, h, data)
	out := make([]*check.Record, 0, len(decoded)+len(skipped))
	// Both come in the envelope's order: merge them by index.
	for len(decoded) > 0 || len(skipped) > 0 {
		if len(skipped) > 0 && (len(decoded) == 0 || skipped[0].Index < decoded[0].Index) {
			out = append(out, &check.Record{Seq: seq, Time: at, Session: session, Run: h.Get(toolrpc.HeaderRunID), Writer: h.Get(history.HeaderWriter), Bad: skipped[0].Err.Error()})
			skipped = skipped[1:]
			continue
		}
		d := decoded[0]
		decoded = decoded[1:]
		r := &check.Record{Seq: seq, Time: at, Session: session, Run: d.RunID, Writer: d.Writer, Msg: d.Message, Final: d.Final, End: d.Final != nil}
		if d.Retained != nil {
			r.Cut = max(d.Retained.FirstSeq, 1)
		} else if r.Msg == nil && r.Final == nil {
			r.Bad = fmt.Sprintf("history record %d of run %s is neither a message nor a run end", seq, d.RunID)
		}
		out = append(out, r)
	}
	return out
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
		visible := check.Visible(recs)
		kept, _ := check.Kept(p, visible)
		done, missing = check.Answered(kept, visible)
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
