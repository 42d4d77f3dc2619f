package input

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

func TestEventsStorageToUse(t *testing.T) {
	mem, file := EventsMemory, EventsFile
	for _, tc := range []struct {
		name     string
		want     EventsStorage
		have     *EventsStorage
		use      EventsStorage
		keptHave bool
	}{
		{"new stream in memory", EventsMemory, nil, EventsMemory, false},
		{"new stream in files", EventsFile, nil, EventsFile, false},
		{"memory stream, memory asked", EventsMemory, &mem, EventsMemory, false},
		{"file stream of an earlier release, memory asked: kept", EventsMemory, &file, EventsFile, true},
		{"memory stream, files asked: kept", EventsFile, &mem, EventsMemory, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			use, kept := eventsStorageToUse(tc.want, tc.have)
			if use != tc.use || kept != tc.keptHave {
				t.Errorf("eventsStorageToUse(%s, %v) = %s, %v; want %s, %v", tc.want, tc.have, use, kept, tc.use, tc.keptHave)
			}
		})
	}
}

func TestParseEventsStorage(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"memory", "memory", ""},
		{"file", "file", ""},
		{"", "", `events-storage "": want memory or file`},
		{"MEMORY", "", `events-storage "MEMORY": want memory or file`},
		{"hostile: " + strings.Repeat("x", 1000), "", `events-storage "hostile: xxxxxxxxxxxxxxxxxxxxxxx…": want memory or file`},
	} {
		got, err := ParseEventsStorage(tc.in)
		if string(got) != tc.want || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("ParseEventsStorage(%.20q) = %q, %v; want %q, %s", tc.in, got, err, tc.want, tc.err)
		}
	}
}

// syncBuffer is a log sink that tests read while the code under test writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEventStreamStorage opens the durable side on a new server (the event
// stream is created in memory, 128 MiB), asks for files on a server whose
// event stream is in memory (it keeps memory, and the log says so), and
// asks for memory where an earlier release made the stream in files (it
// keeps files and their 1 GiB).
func TestEventStreamStorage(t *testing.T) {
	ctx := context.Background()
	subjects, _ := bus.NewSubjects("")
	streamOf := func(t *testing.T, js jetstream.JetStream) jetstream.StreamConfig {
		t.Helper()
		s, err := js.Stream(ctx, "AGENT_EVENTS")
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config
	}

	t.Run("new", func(t *testing.T) {
		nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
		d, err := OpenDurable(ctx, nc, subjects, DurableConfig{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := streamOf(t, d.JetStream())
		if cfg.Storage != jetstream.MemoryStorage || cfg.MaxBytes != 128<<20 {
			t.Errorf("event stream: storage %v, max bytes %d; want memory, %d", cfg.Storage, cfg.MaxBytes, 128<<20)
		}
		if got := d.Config(); got.EventsStorage != EventsMemory || got.EventsMaxBytes != 128<<20 {
			t.Errorf("Config: %s, %d bytes; want memory, %d", got.EventsStorage, got.EventsMaxBytes, 128<<20)
		}

		var log syncBuffer
		d, err = OpenDurable(ctx, nc, subjects, DurableConfig{EventsStorage: EventsFile, Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if cfg := streamOf(t, d.JetStream()); cfg.Storage != jetstream.MemoryStorage {
			t.Errorf("event stream with files asked: storage %v, want it kept in memory", cfg.Storage)
		}
		if got := d.Config().EventsStorage; got != EventsMemory {
			t.Errorf("Config with files asked: %s, want memory", got)
		}
		if !strings.Contains(log.String(), "keeps the storage it has") || !strings.Contains(log.String(), "asked=file") {
			t.Errorf("log = %q, want it to say the stream keeps its storage", log.String())
		}
	})

	t.Run("earlier file stream", func(t *testing.T) {
		nc := bustest.MustConnect(t, bustest.MustRunNATS(t))
		js, _ := jetstream.New(nc)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: "AGENT_EVENTS", Subjects: []string{"agent.events.>"}, Storage: jetstream.FileStorage, MaxBytes: 1 << 30,
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish("agent.events.a.s.run.start", []byte(`{"type":"run.start"}`)); err != nil {
			t.Fatal(err)
		}
		bustest.Eventually(t, "the event stored", func() bool {
			s, err := js.Stream(ctx, "AGENT_EVENTS")
			return err == nil && s.CachedInfo().State.Msgs == 1
		})
		var log syncBuffer
		d, err := OpenDurable(ctx, nc, subjects, DurableConfig{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		s, err := js.Stream(ctx, "AGENT_EVENTS")
		if err != nil {
			t.Fatal(err)
		}
		info := s.CachedInfo()
		if info.Config.Storage != jetstream.FileStorage || info.Config.MaxBytes != 1<<30 || info.State.Msgs != 1 {
			t.Errorf("event stream: storage %v, max bytes %d, %d events; want files, 1 GiB and the event kept",
				info.Config.Storage, info.Config.MaxBytes, info.State.Msgs)
		}
		if got := d.Config(); got.EventsStorage != EventsFile || got.EventsMaxBytes != 1<<30 {
			t.Errorf("Config: %s, %d bytes; want file, 1 GiB", got.EventsStorage, got.EventsMaxBytes)
		}
		if !strings.Contains(log.String(), "keeps the storage it has") || !strings.Contains(log.String(), "storage=file") {
			t.Errorf("log = %q, want it to say the stream keeps its files", log.String())
		}
	})
}

// TestMemoryEventStreamAfterRestart restarts a lone server, which forgets a
// memory stream: the event stream is created again on the reconnection, and
// keeps the events published after it.
func TestMemoryEventStreamAfterRestart(t *testing.T) {
	ctx := context.Background()
	addr, dir := bustest.FreeAddr(t), t.TempDir()
	srv := bustest.MustRunNATSAt(t, addr, dir)
	nc := bustest.MustConnect(t, srv)
	subjects, _ := bus.NewSubjects("")
	d, err := OpenDurable(ctx, nc, subjects, DurableConfig{})
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	bustest.MustRunNATSAt(t, addr, dir)

	bustest.Eventually(t, "the event stream created again", func() bool {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s, err := d.JetStream().Stream(actx, "AGENT_EVENTS")
		return err == nil && s.CachedInfo().Config.Storage == jetstream.MemoryStorage
	})
	if err := nc.Publish("agent.events.a.s.run.start", []byte(`{"type":"run.start"}`)); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "the event kept", func() bool {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		s, err := d.JetStream().Stream(actx, "AGENT_EVENTS")
		return err == nil && s.CachedInfo().State.Msgs == 1
	})
}
