package input

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// EventsStorage is where the event stream keeps the events of every run for
// observers that connect late. The events are not the truth of a session
// (its history is), so they need not be written to disk.
type EventsStorage string

const (
	// EventsMemory keeps the events in the servers' memory, bounded by
	// EventsMaxBytes: no file write per event. A server that restarts
	// forgets them (one of a cluster takes them back from the others).
	EventsMemory EventsStorage = "memory"
	// EventsFile keeps them in files, so that they outlive a restart of
	// every server.
	EventsFile EventsStorage = "file"
)

// ParseEventsStorage parses the value of --events-storage: memory or file.
func ParseEventsStorage(s string) (EventsStorage, error) {
	switch st := EventsStorage(s); st {
	case EventsMemory, EventsFile:
		return st, nil
	}
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return "", fmt.Errorf("events-storage %q: want %s or %s", s, EventsMemory, EventsFile)
}

// DefaultEventsMaxBytes is the size bound of an event stream of storage st
// when EventsMaxBytes is not set: 128 MiB in memory (half of the 256 MB of
// memory store that deploy/nats gives JetStream), 1 GiB in files.
func DefaultEventsMaxBytes(st EventsStorage) int64 {
	if st == EventsFile {
		return 1 << 30
	}
	return 128 << 20
}

func (st EventsStorage) jetstream() jetstream.StorageType {
	if st == EventsFile {
		return jetstream.FileStorage
	}
	return jetstream.MemoryStorage
}

func storageOf(t jetstream.StorageType) EventsStorage {
	if t == jetstream.MemoryStorage {
		return EventsMemory
	}
	return EventsFile
}

// eventsStorageToUse decides the storage of the event stream: the one asked
// for, unless the stream exists (have is its storage) with another, which it
// keeps, since JetStream does not move a stream from one storage to the
// other; kept says so.
func eventsStorageToUse(want EventsStorage, have *EventsStorage) (use EventsStorage, kept bool) {
	if have == nil || *have == want {
		return want, false
	}
	return *have, true
}

// SetupEventStream creates (or updates) the stream that keeps recent events
// for observers that connect late, and returns cfg with its defaults filled
// in and the storage and size the stream has. A stream that exists keeps
// its storage, and cfg.Logger hears that it did and how to change it:
// deleting the stream, so that the next start creates it as asked.
func SetupEventStream(ctx context.Context, js jetstream.JetStream, subjects bus.Subjects, cfg DurableConfig) (DurableConfig, error) {
	sized := cfg.EventsMaxBytes > 0
	cfg.defaults()
	name := subjects.StreamName("EVENTS")
	var have *EventsStorage
	err := bus.RetryJS(ctx, func(ctx context.Context) error {
		s, err := js.Stream(ctx, name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return nil
		case err != nil:
			return err
		}
		st := storageOf(s.CachedInfo().Config.Storage)
		have = &st
		return nil
	})
	if err != nil {
		return cfg, fmt.Errorf("event stream %s: %w", name, err)
	}
	use, kept := eventsStorageToUse(cfg.EventsStorage, have)
	if kept {
		cfg.Logger.Warn("the event stream keeps the storage it has: JetStream does not change the storage of a stream; delete the stream (nats stream rm) to have it created again as asked",
			"stream", name, "storage", use, "asked", cfg.EventsStorage)
	}
	cfg.EventsStorage = use
	if !sized {
		cfg.EventsMaxBytes = DefaultEventsMaxBytes(use)
	}
	if err := ensureEventStream(ctx, js, name, subjects, cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func ensureEventStream(ctx context.Context, js jetstream.JetStream, name string, subjects bus.Subjects, cfg DurableConfig) error {
	_, err := bus.EnsureStream(ctx, js, jetstream.StreamConfig{
		Name: name, Description: "agentfleet lifecycle events, kept for late observers",
		Subjects: []string{subjects.Events()}, Storage: cfg.EventsStorage.jetstream(),
		MaxAge: cfg.EventsMaxAge, MaxBytes: cfg.EventsMaxBytes, Discard: jetstream.DiscardOld,
		Replicas: cfg.Replicas, AllowDirect: true,
	})
	if err != nil {
		return fmt.Errorf("event stream %s: %w", name, err)
	}
	return nil
}

// recreateTimeout bounds the creation of the event stream after a
// reconnection (the server may still be starting JetStream).
const recreateTimeout = 30 * time.Second

// recreateEventsOnReconnect has the event stream created again, if it is
// missing, each time nc reconnects: a server that restarted has forgotten
// a memory stream, and the events of the runs after it would be kept for
// nobody. The handler nc had runs first.
func (d *Durable) recreateEventsOnReconnect(nc *nats.Conn, subjects bus.Subjects) {
	prev := nc.Opts.ReconnectedCB
	name := subjects.StreamName("EVENTS")
	nc.SetReconnectHandler(func(c *nats.Conn) {
		if prev != nil {
			prev(c)
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), recreateTimeout)
			defer cancel()
			if err := ensureEventStream(ctx, d.js, name, subjects, d.cfg); err != nil {
				d.cfg.Logger.Warn("event stream after a reconnection", "stream", name, "err", err)
			}
		}()
	})
}
