package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet/internal/chaos"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/ledger"
)

// ChaosConfig configures the chaos subcommand: the fault-injection harness
// of internal/chaos, over one or more consecutive seeds.
type ChaosConfig struct {
	Seed          uint64        `json:"seed"`
	Seeds         int           `json:"seeds"`
	Sessions      int           `json:"sessions"`
	Messages      int           `json:"messages"`
	Faults        int           `json:"faults"`
	Duration      time.Duration `json:"duration_ns"`
	Quiesce       time.Duration `json:"quiesce_ns"`
	Orchestrators int           `json:"orchestrators"`
	Nodes         int           `json:"nats_nodes"`
	Kinds         string        `json:"fault_kinds"`
	ModelFail     int           `json:"model_fail_every"`
	BinDir        string        `json:"bin_dir"`
	Keep          bool          `json:"keep"`
	Net           bool          `json:"net_faults"`
	Hog           bool          `json:"cpu_hog"`
}

func (c *ChaosConfig) register(fs *flag.FlagSet) {
	fs.Uint64Var(&c.Seed, "seed", 1, "first seed")
	fs.IntVar(&c.Seeds, "seeds", 1, "consecutive seeds to run, from --seed")
	fs.IntVar(&c.Sessions, "sessions", 16, "sessions")
	fs.IntVar(&c.Messages, "messages", 80, "distinct user messages, spread over the sessions")
	fs.IntVar(&c.Faults, "faults", 6, "faults injected during the load (0 for none)")
	fs.DurationVar(&c.Duration, "duration", 15*time.Second, "how long the load is spread over")
	fs.DurationVar(&c.Quiesce, "quiesce", 60*time.Second, "bound of the wait for every message to be answered after the load")
	fs.IntVar(&c.Orchestrators, "orchestrators", 1, "orchestrators: 1 to 3")
	fs.IntVar(&c.Nodes, "nodes", 1, "NATS servers: 1, or 3 clustered (the streams replicated on each)")
	fs.StringVar(&c.Kinds, "fault-kinds", "", "comma-separated fault kinds (default all: "+kindList()+")")
	fs.IntVar(&c.ModelFail, "model-fail-every", 0, "fail the first attempt of about one model request in K with HTTP 500 (0: never)")
	fs.StringVar(&c.BinDir, "bin-dir", "", "directory of nats-server, orchestrator and toolworker; default: go build them into a temporary directory")
	fs.BoolVar(&c.Keep, "keep", false, "keep every seed's work directory (NATS store, logs)")
	fs.BoolVar(&c.Net, "net", true, "deal the network faults too (blackhole-orchestrator, slow-orchestrator) when --fault-kinds is not given")
	fs.BoolVar(&c.Hog, "hog", false, "run a CPU hog (a busy process per core) during the load")
}

func kindList() string {
	var s []string
	for _, k := range chaos.AllFaultKinds {
		s = append(s, string(k))
	}
	return strings.Join(s, ",")
}

func (c *ChaosConfig) check() error {
	switch {
	case c.Seeds < 1:
		return fmt.Errorf("--seeds %d: must be at least 1", c.Seeds)
	case c.Sessions < 1:
		return fmt.Errorf("--sessions %d: must be at least 1", c.Sessions)
	case c.Messages < 1:
		return fmt.Errorf("--messages %d: must be at least 1", c.Messages)
	case c.Faults < 0:
		return fmt.Errorf("--faults %d: must not be negative", c.Faults)
	case c.Orchestrators < 1 || c.Orchestrators > 3:
		return fmt.Errorf("--orchestrators %d: want 1 to 3", c.Orchestrators)
	case c.Nodes != 1 && c.Nodes != 3:
		return fmt.Errorf("--nodes %d: want 1 or 3", c.Nodes)
	case c.Duration <= 0:
		return fmt.Errorf("--duration %v: must be positive", c.Duration)
	}
	return nil
}

// ChaosReport is the result of the chaos subcommand: one harness report
// per seed.
type ChaosReport struct {
	Benchmark string          `json:"benchmark"`
	Machine   Machine         `json:"machine"`
	Config    ChaosConfig     `json:"config"`
	Seeds     []*chaos.Report `json:"seeds"`
}

func (r *ChaosReport) writeTables(w io.Writer) {
	fmt.Fprintf(w, "Chaos: %s\n", r.Machine)
	for _, s := range r.Seeds {
		fmt.Fprintln(w)
		s.WriteTables(w)
	}
	fmt.Fprintln(w, "\nViolations per seed")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"seed", "orch", "nodes", "msgs", "runs", "faults"}
	for _, c := range check.Classes {
		head = append(head, string(c))
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, s := range r.Seeds {
		row := []string{fmt.Sprint(s.Seed), fmt.Sprint(s.Config.Orchestrators), fmt.Sprint(max(s.Config.NATSNodes, 1)), fmt.Sprint(s.Messages), fmt.Sprint(s.Runs), fmt.Sprint(len(s.Faults))}
		for _, c := range check.Classes {
			row = append(row, fmt.Sprint(s.Count(c)))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

// errViolations makes fleetbench chaos exit 1 when it found violations.
var errViolations = errors.New("chaos: the fleet violated its guarantees (see the report)")

func (m *Main) runChaos(ctx context.Context) (report, error) {
	c := m.Chaos
	bin := c.BinDir
	if bin == "" {
		dir, err := os.MkdirTemp("", "fleetbench-chaos-bin-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(m.Stderr, "fleetbench chaos: building nats-server, orchestrator and toolworker")
		if bin, err = chaos.BuildBinaries(ctx, dir); err != nil {
			return nil, err
		}
	}
	var kinds []chaos.FaultKind
	for k := range strings.SplitSeq(c.Kinds, ",") {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, chaos.FaultKind(k))
		}
	}
	faults := c.Faults
	if faults == 0 {
		faults = -1 // none
	}
	rep := &ChaosReport{Benchmark: cmdChaos, Machine: thisMachine(), Config: c}
	for i := range c.Seeds {
		r, err := chaos.Run(ctx, chaos.Config{
			Seed: c.Seed + uint64(i), Sessions: c.Sessions, Messages: c.Messages, Duration: c.Duration,
			Quiesce: c.Quiesce, Faults: faults, FaultKinds: kinds, Orchestrators: c.Orchestrators, NATSNodes: c.Nodes,
			ModelFailEvery: c.ModelFail, BinDir: bin, KeepWorkDir: c.Keep, NetFaults: c.Net, Hog: c.Hog,
			LedgerCommand: []string{m.Exe, cmdChaosLedger}, LedgerEnv: []string{childEnv + "=1"},
			Logf: func(format string, args ...any) { fmt.Fprintf(m.Stderr, format+"\n", args...) },
		})
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", c.Seed+uint64(i), err)
		}
		rep.Seeds = append(rep.Seeds, r)
	}
	return rep, nil
}

// runChaosLedger is the ledger worker child of the chaos subcommand.
func (m *Main) runChaosLedger(ctx context.Context) error {
	url := m.NATSURL
	if url == "" {
		url = os.Getenv(ledger.Env)
	}
	if url == "" {
		return errors.New("chaos-ledger: --nats-url (or $" + ledger.Env + ") is required")
	}
	return ledger.Serve(ctx, url, m.Stdout)
}
