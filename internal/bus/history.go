package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of history records.
const (
	HeaderRecord = "Agentfleet-Record" // "message" (default) or "run_end"
	RecordRunEnd = "run_end"
)

// StreamName returns the JetStream stream name of a fleet's kind of stream
// ("INPUT", "HISTORY", "EVENTS"): the prefix upper-cased, dots as '_'.
func (s Subjects) StreamName(kind string) string {
	return strings.ToUpper(strings.ReplaceAll(s.Prefix, ".", "_")) + "_" + kind
}

// History returns the subject of a session's stored conversation.
func (s Subjects) History(agent, session string) string {
	return s.Prefix + ".history." + agent + "." + session
}

// HistoryStore keeps the conversation of every session in a JetStream stream,
// one message per history entry on <prefix>.history.<agent>.<session>:
// appending is O(1) however long the session, and a session is loaded by
// replaying its subject.
type HistoryStore struct {
	js       jetstream.JetStream
	subjects Subjects
	stream   string
}

// Stored is a session's conversation as loaded from the store.
type Stored struct {
	Messages []agentfleet.Message
	// RunOf maps the id of each stored user message to the run that took
	// it; Ended holds the runs that ended.
	RunOf map[string]string
	Ended map[string]bool
}

// NewHistoryStore creates (or updates) the history stream. maxAge bounds how
// long sessions are kept; zero keeps them forever.
func NewHistoryStore(ctx context.Context, js jetstream.JetStream, subjects Subjects, maxAge time.Duration, replicas int) (*HistoryStore, error) {
	name := subjects.StreamName("HISTORY")
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        name,
		Description: "agentfleet session histories",
		Subjects:    []string{subjects.Prefix + ".history.>"},
		Storage:     jetstream.FileStorage,
		MaxAge:      maxAge,
		Replicas:    max(replicas, 1),
		AllowDirect: true,
	})
	if err != nil {
		return nil, fmt.Errorf("history stream %s: %w", name, err)
	}
	return &HistoryStore{js: js, subjects: subjects, stream: name}, nil
}

// Append stores one message of a run and waits for the server to have it.
func (h *HistoryStore) Append(ctx context.Context, agent, session, runID string, m agentfleet.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("history: encode %s message: %w", m.MessageRole(), err)
	}
	msg := nats.NewMsg(h.subjects.History(agent, session))
	msg.Data = b
	msg.Header.Set(HeaderRunID, runID)
	if _, err := h.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("history: store %s message of session %s: %w", m.MessageRole(), session, err)
	}
	return nil
}

// AppendRunEnd records that a run ended, with its final message.
func (h *HistoryStore) AppendRunEnd(ctx context.Context, agent, session, runID string, final *agentfleet.AssistantMessage) error {
	b, err := json.Marshal(final)
	if err != nil {
		return fmt.Errorf("history: encode final message: %w", err)
	}
	msg := nats.NewMsg(h.subjects.History(agent, session))
	msg.Data = b
	msg.Header.Set(HeaderRunID, runID)
	msg.Header.Set(HeaderRecord, RecordRunEnd)
	if _, err := h.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("history: store end of run %s: %w", runID, err)
	}
	return nil
}

// Load replays a session's conversation. A session never stored loads empty.
func (h *HistoryStore) Load(ctx context.Context, agent, session string) (*Stored, error) {
	st := &Stored{RunOf: map[string]string{}, Ended: map[string]bool{}}
	subject := h.subjects.History(agent, session)
	cons, err := h.js.OrderedConsumer(ctx, h.stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("history: load session %s: %w", session, err)
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("history: load session %s: %w", session, err)
	}
	total := info.NumPending
	for got := uint64(0); got < total; {
		batch, err := cons.Fetch(int(min(total-got, 512)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("history: load session %s: %w", session, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			got++
			if err := st.add(m); err != nil {
				return nil, fmt.Errorf("history: session %s: %w", session, err)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return nil, fmt.Errorf("history: load session %s: %w", session, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("history: load session %s: %d of %d messages arrived", session, got, total)
		}
	}
	return st, nil
}

func (st *Stored) add(m jetstream.Msg) error {
	runID := m.Headers().Get(HeaderRunID)
	if m.Headers().Get(HeaderRecord) == RecordRunEnd {
		st.Ended[runID] = true
		return nil
	}
	msg, err := agentfleet.UnmarshalMessage(m.Data())
	if err != nil {
		return err
	}
	if u, ok := msg.(*agentfleet.UserMessage); ok && u.ID != "" {
		st.RunOf[u.ID] = runID
	}
	st.Messages = append(st.Messages, msg)
	return nil
}
