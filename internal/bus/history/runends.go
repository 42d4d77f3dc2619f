package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// RunEnd is the stored end of one run: its agent, session and run, when
// it was stored, and its final message (whose usage holds the run's
// tokens and cost).
type RunEnd struct {
	Agent, Session, RunID string
	Stored                time.Time
	Final                 *agentfleet.AssistantMessage
}

// RunEnds reads the stored ends of the runs of agent ("" for every agent)
// stored since since (the zero time: all), in stream order, with an
// ordered consumer of the history stream of subjects' prefix. Records that
// do not decode are returned as Skipped.
func RunEnds(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects, agent string, since time.Time) ([]RunEnd, []Skipped, error) {
	filter := subjects.History("*", "*")
	if agent != "" {
		filter = subjects.History(agent, "*")
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if !since.IsZero() {
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	stream := StreamName(subjects)
	cons, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("history %s: %w", stream, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("history %s: %w", stream, err)
	}
	var (
		ends    []RunEnd
		skipped []Skipped
		prefix  = subjects.Prefix + ".history."
	)
	total := info.NumPending
	for got := uint64(0); got < total; {
		batch, err := cons.Fetch(int(min(total-got, 1024)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, nil, fmt.Errorf("history %s: %w", stream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			got++
			meta, err := m.Metadata()
			if err != nil {
				return nil, nil, fmt.Errorf("history %s: %w", stream, err)
			}
			a, s, ok := strings.Cut(strings.TrimPrefix(m.Subject(), prefix), ".")
			if !ok {
				continue
			}
			recs, sk := Decode(meta.Sequence.Stream, m.Headers(), m.Data())
			skipped = append(skipped, sk...)
			for _, r := range recs {
				if r.Final != nil {
					ends = append(ends, RunEnd{Agent: a, Session: s, RunID: r.RunID, Stored: meta.Timestamp, Final: r.Final})
				}
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, nil, fmt.Errorf("history %s: %w", stream, err)
		}
		if n == 0 {
			return nil, nil, fmt.Errorf("history %s: %d of %d messages arrived", stream, got, total)
		}
	}
	return ends, skipped, nil
}
