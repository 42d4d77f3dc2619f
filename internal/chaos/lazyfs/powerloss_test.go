package lazyfs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/lazyfs"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	buildOnce sync.Once
	natsBin   string
	buildErr  error
)

// TestMain removes the nats-server built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if natsBin != "" {
		os.RemoveAll(filepath.Dir(natsBin))
	}
	os.Exit(code)
}

// natsServer builds the module's nats-server once per test binary.
func natsServer(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lazyfs-bin-")
		if err != nil {
			buildErr = err
			return
		}
		natsBin = filepath.Join(dir, "nats-server")
		cmd := exec.Command("go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build nats-server: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return natsBin
}

// shippedSync is the sync_interval of deploy/nats/nats.conf, as the
// nats-server config reads it.
func shippedSync(t *testing.T) string {
	t.Helper()
	opts, err := server.ProcessConfigFile(filepath.Join("..", "..", "..", "deploy", "nats", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if opts.SyncAlways {
		return "always"
	}
	return opts.SyncInterval.String()
}

// powerLoss is one run: a nats-server child with its store on a lazy file
// system, publishers whose acknowledgements are recorded, a power cut and
// a SIGKILL at once while they publish, and the stream read back after the
// "power" is back.
type powerLoss struct {
	sync       string // sync_interval of the server
	checkpoint bool   // sync the store once the stream exists
	acks       int    // acknowledgements to wait for before the cut
}

func (pl powerLoss) run(t *testing.T) (stream, kv check.AckedReport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	bin := natsServer(t)
	work, backing, mnt := t.TempDir(), t.TempDir(), t.TempDir()
	l, err := lazyfs.Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	mounted := true
	t.Cleanup(func() {
		if mounted {
			l.Unmount()
		}
	})
	port, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	mport, err := proc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(work, "nats.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\njetstream {\n  store_dir: %q\n  sync_interval: %q\n}\n",
		port, mport, filepath.Join(mnt, "js"), pl.sync)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := &proc.Proc{Name: "nats-server", Argv: []string{bin, "-c", conf}, Log: filepath.Join(work, "nats.log"),
		Ready: proc.HTTPReady(fmt.Sprintf("http://127.0.0.1:%d/healthz", mport))}
	t.Cleanup(srv.Close)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if err := srv.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	checkSync(t, mport, pl.sync)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	nc, err := nats.Connect(url, nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "POWER", Subjects: []string{"power.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	// A KV bucket, as the leases are: one key per put, so that every
	// acknowledged revision stays.
	bucket, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "POWERKV", Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if pl.checkpoint {
		if err := l.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}

	var (
		mu      sync.Mutex
		acked   []check.Acked
		reached = make(chan struct{})
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	var kvAcked []check.Acked
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			data := []byte(fmt.Sprintf("lease %d", i))
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			rev, err := bucket.Put(pctx, fmt.Sprintf("lease.%d", i), data)
			pcancel()
			if err != nil {
				return
			}
			mu.Lock()
			kvAcked = append(kvAcked, check.Acked{Seq: rev, Data: data})
			mu.Unlock()
		}
	}()
	const publishers = 4
	for g := range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				data := []byte(fmt.Sprintf("message %d of publisher %d", i, g))
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				ack, err := js.Publish(pctx, "power.in", data)
				pcancel()
				if err != nil {
					return // the server is gone
				}
				mu.Lock()
				acked = append(acked, check.Acked{Seq: ack.Sequence, Data: data})
				if len(acked) == pl.acks {
					close(reached)
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatalf("%d acknowledgements not reached: %v", pl.acks, ctx.Err())
	}
	// The power cut and the kill at once, while the publishers publish.
	files, dropped := l.PowerCut()
	if err := srv.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	nc.Close()
	wg.Wait()
	t.Logf("sync_interval %s: power cut while publishing, after %d acknowledgements; it dropped %d unsynced bytes of %d files", pl.sync, len(acked), dropped, files)
	if err := l.Unmount(); err != nil {
		t.Fatal(err)
	}
	mounted = false

	// The power is back: mount again over what reached the "disk".
	if l, err = lazyfs.Mount(backing, mnt); err != nil {
		t.Fatal(err)
	}
	mounted = true
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	nc, err = nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	stored := map[uint64][]byte{}
	str, err := js.Stream(ctx, "POWER")
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		t.Logf("the stream itself was lost")
	case err != nil:
		t.Fatal(err)
	default:
		for _, a := range acked {
			m, err := str.GetMsg(ctx, a.Seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("reading seq %d back: %v", a.Seq, err)
			}
			stored[a.Seq] = bytes.Clone(m.Data)
		}
	}
	kvStored := map[uint64][]byte{}
	if bucket, err = js.KeyValue(ctx, "POWERKV"); err == nil {
		for i, a := range kvAcked {
			e, err := bucket.Get(ctx, fmt.Sprintf("lease.%d", i))
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("reading lease.%d back: %v", i, err)
			}
			if e.Revision() == a.Seq {
				kvStored[a.Seq] = bytes.Clone(e.Value())
			}
		}
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatal(err)
	}
	stream, kv = check.CheckAcked(acked, stored), check.CheckAcked(kvAcked, kvStored)
	t.Logf("sync_interval %s: stream %v; KV %v", pl.sync, stream, kv)
	return stream, kv
}

// TestPowerLoss: with the shipped setting (sync_interval: always), a power
// cut while publishers publish loses no acknowledged message of a
// JetStream file stream and no acknowledged put of a KV bucket; with
// nats-server's lazy default (2m), the same cut loses acknowledged
// messages and puts, so the test can tell the two apart.
func TestPowerLoss(t *testing.T) {
	if err := lazyfs.Available(); err != nil {
		t.Skipf("no FUSE here, so no power-loss test: %v", err)
	}
	t.Run("shipped", func(t *testing.T) {
		sync := shippedSync(t)
		if sync != "always" {
			t.Errorf("deploy/nats/nats.conf syncs every %s, not always", sync)
		}
		// No checkpoint: the stream's creation must be on disk too.
		stream, kv := (powerLoss{sync: sync, acks: 300}).run(t)
		if !stream.OK() || !kv.OK() {
			t.Errorf("acknowledged writes lost with sync_interval %s: stream %v; KV %v", sync, stream, kv)
		}
		if kv.Acked == 0 {
			t.Error("no KV put was acknowledged before the cut")
		}
	})
	t.Run("lazy", func(t *testing.T) {
		// The store is synced once the stream exists (the writeback an
		// OS does in time), so that what the cut loses is messages.
		stream, kv := (powerLoss{sync: "2m", checkpoint: true, acks: 300}).run(t)
		if stream.Lost+stream.Altered == 0 || kv.Lost+kv.Altered == 0 {
			t.Errorf("with lazy sync a power cut lost nothing acknowledged of the stream (%v) or the KV (%v): the test cannot tell the settings apart", stream, kv)
		}
	})
}

// checkSync checks that the server's JetStream syncs as asked, from its
// monitoring endpoint: a duration unquoted in a nats-server config is read
// as a number ("2m" as two million seconds).
func checkSync(t *testing.T, mport int, want string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/varz", mport))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var varz struct {
		JetStream struct {
			Config struct {
				SyncInterval time.Duration `json:"sync_interval"`
				SyncAlways   bool          `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&varz); err != nil {
		t.Fatal(err)
	}
	got := varz.JetStream.Config.SyncInterval.String()
	if varz.JetStream.Config.SyncAlways {
		got = "always"
	}
	if w, err := time.ParseDuration(want); err == nil {
		want = w.String()
	}
	if got != want {
		t.Fatalf("the server syncs %s, want %s", got, want)
	}
}
