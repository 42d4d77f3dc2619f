package server

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkPublishSync is the price of an fsync per write: one JetStream
// publish, acknowledged, to a file stream of the embedded server, with
// every write synced (always) and with nats-server's lazy default (2m);
// sequential (one in flight) and with 64 asynchronous publishes in
// flight. The store is in the test's temporary directory, on whatever
// disk holds it.
func BenchmarkPublishSync(b *testing.B) {
	for _, c := range []struct {
		name string
		sync Sync
	}{{"always", SyncAlways}, {"lazy-2m", Sync{Interval: 2 * time.Minute}}} {
		for _, inFlight := range []int{1, 64} {
			b.Run(c.name+"/in-flight-"+map[int]string{1: "1", 64: "64"}[inFlight], func(b *testing.B) {
				s, err := RunEmbedded(EmbeddedConfig{Listen: "127.0.0.1:-1", DataDir: b.TempDir(), Sync: c.sync})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { s.Shutdown(); s.WaitForShutdown() }()
				nc, err := nats.Connect(s.ClientURL())
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				js, err := jetstream.New(nc)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BENCH", Subjects: []string{"bench"}}); err != nil {
					b.Fatal(err)
				}
				data := make([]byte, 512)
				b.SetBytes(int64(len(data)))
				b.ResetTimer()
				if inFlight == 1 {
					for b.Loop() {
						if _, err := js.Publish(ctx, "bench", data); err != nil {
							b.Fatal(err)
						}
					}
					return
				}
				sem := make(chan struct{}, inFlight)
				for b.Loop() {
					sem <- struct{}{}
					f, err := js.PublishAsync("bench", data)
					if err != nil {
						b.Fatal(err)
					}
					go func() {
						select {
						case <-f.Ok():
						case err := <-f.Err():
							b.Error(err)
						}
						<-sem
					}()
				}
				for range inFlight {
					sem <- struct{}{}
				}
			})
		}
	}
}
