package chaos

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/chaos/ledger"
	"github.com/agentfleet/agentfleet/internal/chaos/observe"
)

var (
	flagSeed  = flag.Uint64("chaos.seed", 1, "first seed of the chaos test")
	flagSeeds = flag.Int("chaos.seeds", 1, "number of consecutive seeds to run, from -chaos.seed")
	flagLong  = flag.Bool("chaos.long", false, "run the long variant: a few hundred messages over dozens of sessions")
	flagOrchs = flag.Int("chaos.orchestrators", 0, "orchestrators (1 to 3); default 1 for even seeds and 2 for odd ones")
	flagNodes = flag.Int("chaos.nodes", 1, "NATS servers: 1, or 3 clustered (the streams replicated on each)")
	flagNet   = flag.Bool("chaos.net", true, "deal the network faults too: blackhole-orchestrator and slow-orchestrator (-chaos.net=false for the deck without them)")
	flagKinds = flag.String("chaos.kinds", "", "comma-separated fault kinds to deal (default: all that apply)")
	flagHog   = flag.Bool("chaos.hog", false, "run a CPU hog on every core during the load")
	flagDeleg = flag.Bool("chaos.delegate", true, "give agent default agent helper as a tool, asked for about one message in four (-chaos.delegate=false for sessions without delegation)")
	flagKeep  = flag.Bool("chaos.keep", false, "keep the work directory (NATS store, logs) of every seed")
	flagKeepN = flag.Int("chaos.history", 0, "bound the history of the sessions to this many records (their profile's history: {max_records}); 0 for none")
	flagErase = flag.Int("chaos.erase", 0, "sessions the load deletes while the faults go on, each with messages before and one after its delete (0 for none)")
)

// The test binary doubles as the ledger worker.
func TestMain(m *testing.M) {
	ledger.ChildMain()
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// binaries builds the programs once per test binary; TestMain removes them.
func binaries(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chaos-bin-")
		if err != nil {
			binErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		binDir, binErr = BuildBinaries(ctx, dir)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// TestChaos runs the harness against the real programs and fails for every
// class of violation it finds, with examples. It is expected to fail until
// the orchestrator's crash recovery is right.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: real processes and faults; skipped with -short")
	}
	bin := binaries(t)
	for i := range *flagSeeds {
		seed := *flagSeed + uint64(i)
		cfg := Config{
			Seed: seed, Sessions: 16, Messages: 80, Duration: 15 * time.Second, Faults: 6,
			Quiesce: 40 * time.Second, BinDir: bin, KeepWorkDir: *flagKeep,
			Logf: t.Logf,
		}
		if *flagLong {
			cfg.Sessions, cfg.Messages, cfg.Duration, cfg.Faults, cfg.Quiesce = 40, 400, 60*time.Second, 20, 90*time.Second
		}
		cfg.Orchestrators, cfg.NATSNodes = *flagOrchs, *flagNodes
		cfg.NetFaults, cfg.Hog, cfg.Delegate, cfg.Erase, cfg.HistoryMaxRecords = *flagNet, *flagHog, *flagDeleg, *flagErase, *flagKeepN
		if *flagKinds != "" {
			for _, k := range strings.Split(*flagKinds, ",") {
				cfg.FaultKinds = append(cfg.FaultKinds, FaultKind(strings.TrimSpace(k)))
			}
		}
		if cfg.Orchestrators == 0 {
			cfg.Orchestrators = 1 + int(seed%2)
		}
		t.Run("seed="+formatUint(seed), func(t *testing.T) {
			cfg.Logf = t.Logf
			t.Logf("chaos seed %d (rerun with -chaos.seed %d), %d orchestrator(s), %d NATS node(s)", seed, seed, cfg.Orchestrators, cfg.NATSNodes)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			rep, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.WriteTables(&out)
			t.Logf("report:\n%s", out.String())
			for _, v := range rep.Violations {
				if v.Count > 0 {
					t.Errorf("seed %d: %d %s; first: %v", seed, v.Count, v.Class, v.Examples)
				}
			}
			if !rep.Quiesced {
				t.Errorf("seed %d: did not quiesce: %s", seed, rep.QuiesceError)
			}
		})
	}
}

// TestStreamNames checks the harness's stream names against the bus's.
func TestStreamNames(t *testing.T) {
	s, err := bus.NewSubjects("agent")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.StreamName("INPUT"); got != inputStream {
		t.Errorf("input stream %q, the harness reads %q", got, inputStream)
	}
	if observe.Agent != agentName {
		t.Errorf("observe follows the runs of agent %q, the harness's sessions are of %q", observe.Agent, agentName)
	}
	if got := s.StreamName("HISTORY"); got != historyStream {
		t.Errorf("history stream %q, the harness reads %q", got, historyStream)
	}
}

func formatUint(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
