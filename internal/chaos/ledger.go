package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/chaos/model"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The ledger is the harness's tool that is neither idempotent nor read-only,
// so that at-most-once execution can be checked: every execution stores one
// record in the stream LedgerStream (subject LedgerSubject) and waits for
// the JetStream ack before it returns "ledger <arg>".
const (
	LedgerStream  = "CHAOS_LEDGER"
	LedgerSubject = "chaos.ledger"
	// HeaderLedgerCall and HeaderLedgerArg carry the call id and the
	// argument of the execution a ledger record stands for.
	HeaderLedgerCall = "Chaos-Call-Id"
	HeaderLedgerArg  = "Chaos-Arg"
	// HeaderLedgerFence carries the fence the call came with
	// (toolrpc.FormatFence), when it came with one, so that the check can
	// tell an execution of a deposed owner's call.
	HeaderLedgerFence = "Chaos-Fence"
	// LedgerEnv names the environment variable that makes a program run as
	// the ledger worker; its value is the NATS URL. See LedgerChildMain.
	LedgerEnv = "AGENTFLEET_CHAOS_LEDGER_URL"
	// LedgerReplicasEnv, when set, is the number of replicas of the
	// ledger stream (the harness sets it to the NATS nodes); default 1.
	LedgerReplicasEnv = "AGENTFLEET_CHAOS_LEDGER_REPLICAS"
)

// ensureLedgerStream creates (or updates) the ledger stream with replicas.
func ensureLedgerStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: LedgerStream, Description: "agentfleet chaos: executions of the ledger tool",
		Subjects: []string{LedgerSubject}, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
	})
	if err != nil {
		return fmt.Errorf("ledger stream: %w", err)
	}
	return nil
}

// ledgerTool returns the ledger tool, storing its records through js.
func ledgerTool(js jetstream.JetStream) *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        model.ToolLedger,
			Label:       "Ledger",
			Description: "Writes an entry to the ledger. Not idempotent: every call writes one more entry.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"arg":{"type":"string"}},"required":["arg"],"additionalProperties":false}`),
			Annotations: agentfleet.Annotations{},
			Parallel:    true,
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			arg, ok := call.Arguments["arg"].(string)
			if !ok {
				return nil, errors.New(`ledger: argument "arg" must be a string`)
			}
			// One execution, one record: retries of this publish share a
			// Nats-Msg-Id, so they cannot store it twice, while another
			// execution of the same call stores one more.
			var nonce [8]byte
			_, _ = rand.Read(nonce[:])
			msg := nats.NewMsg(LedgerSubject)
			msg.Data = []byte(arg)
			msg.Header.Set(HeaderLedgerCall, call.ID)
			msg.Header.Set(HeaderLedgerArg, arg)
			// The worker refused the call already if its fence is older
			// than one it saw (toolrpc.HeaderFence); the record keeps the
			// fence, so that the check can see that it did.
			if c, _ := toolrpc.CallerFrom(ctx); c.Fence.Epoch != 0 {
				msg.Header.Set(HeaderLedgerFence, toolrpc.FormatFence(c.Fence))
			}
			msg.Header.Set(jetstream.MsgIDHeader, call.ID+"/"+hex.EncodeToString(nonce[:]))
			for {
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := js.PublishMsg(pctx, msg)
				cancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return nil, fmt.Errorf("ledger: store: %w", err)
				}
				if err := proc.Pause(ctx, 100*time.Millisecond); err != nil {
					return nil, fmt.Errorf("ledger: store: %w", err)
				}
			}
			return agentfleet.TextResult("ledger " + arg), nil
		}),
	}
}

// ServeLedger runs the ledger worker on the NATS server(s) at url (a
// comma-separated list) until ctx ends: a tool server of the ledger tool.
// It prints "ready <worker>" on stdout once it serves. The ledger stream
// gets the replicas of $LedgerReplicasEnv.
func ServeLedger(ctx context.Context, url string, stdout io.Writer) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	nc, err := bus.Connect(bus.ConnectConfig{URL: url, Name: "chaos-ledger", Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	replicas := 1
	if v := os.Getenv(LedgerReplicasEnv); v != "" {
		if replicas, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("ledger: $%s: %w", LedgerReplicasEnv, err)
		}
	}
	if err := ensureLedgerStream(ctx, js, replicas); err != nil {
		return err
	}
	// The ledger records its outcomes, as every worker of a fleet with
	// JetStream does: a call in flight when its orchestrator died is
	// answered with what it did instead of "unknown".
	outcomes, err := toolrpc.OpenOutcomes(ctx, js, toolrpc.OutcomeConfig{Replicas: replicas})
	if err != nil {
		return err
	}
	srv, err := toolrpc.Serve(nc, toolrpc.ServerConfig{
		Name: "chaos-ledger", Tools: []*agentfleet.Tool{ledgerTool(js)},
		Heartbeat: 100 * time.Millisecond, Logger: log, Outcomes: outcomes,
		Observe: func(tool, outcome string, _ time.Duration) {
			if outcome == "fenced" {
				log.Warn("ledger: refused a call of a deposed owner", "tool", tool)
			}
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready", srv.Name())
	<-ctx.Done()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Drain(dctx)
}

// LedgerChildMain runs the program as the ledger worker, and exits, when
// the environment variable LedgerEnv is set; otherwise it returns at once.
// Call it first thing in main or TestMain of a program that Config's
// LedgerCommand starts.
func LedgerChildMain() {
	url := os.Getenv(LedgerEnv)
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := ServeLedger(ctx, url, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos ledger:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
