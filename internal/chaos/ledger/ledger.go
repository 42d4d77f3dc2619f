// Package ledger is the fault harness's ledger worker: a tool that is
// neither idempotent nor read-only, whose every execution is stored in a
// JetStream stream with the call id, the argument and the fence it came
// with, so that the harness's checks can count executions against what the
// orchestrators asked for. It runs as its own process (ChildMain).
//
// It may import the root types, internal/bus, toolrpc, chaos/model,
// chaos/proc and nats.go; nothing of the harness that starts it.
package ledger

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
// record in the stream Stream (subject Subject) and waits for the
// JetStream ack before it returns "ledger <arg>".
const (
	Stream  = "CHAOS_LEDGER"
	Subject = "chaos.ledger"
	// HeaderCall and HeaderArg carry the call id and the
	// argument of the execution a ledger record stands for.
	HeaderCall = "Chaos-Call-Id"
	HeaderArg  = "Chaos-Arg"
	// HeaderFence carries the fence the call came with
	// (toolrpc.FormatFence), when it came with one, so that the check can
	// tell an execution of a deposed owner's call.
	HeaderFence = "Chaos-Fence"
	// Env names the environment variable that makes a program run as
	// the ledger worker; its value is the NATS URL. See ChildMain.
	Env = "AGENTFLEET_CHAOS_LEDGER_URL"
	// ReplicasEnv, when set, is the number of replicas of the
	// ledger stream (the harness sets it to the NATS nodes); default 1.
	ReplicasEnv = "AGENTFLEET_CHAOS_LEDGER_REPLICAS"
)

// ensureStream creates (or updates) the ledger stream with replicas.
func ensureStream(ctx context.Context, js jetstream.JetStream, replicas int) error {
	_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: Stream, Description: "agentfleet chaos: executions of the ledger tool",
		Subjects: []string{Subject}, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
	})
	if err != nil {
		return fmt.Errorf("ledger stream: %w", err)
	}
	return nil
}

// tool returns the ledger tool, storing its records through js.
func tool(js jetstream.JetStream) *agentfleet.Tool {
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
			msg := nats.NewMsg(Subject)
			msg.Data = []byte(arg)
			msg.Header.Set(HeaderCall, call.ID)
			msg.Header.Set(HeaderArg, arg)
			// The worker refused the call already if its fence is older
			// than one it saw (toolrpc.HeaderFence); the record keeps the
			// fence, so that the check can see that it did.
			if c, _ := toolrpc.CallerFrom(ctx); c.Fence.Epoch != 0 {
				msg.Header.Set(HeaderFence, toolrpc.FormatFence(c.Fence))
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

// Serve runs the ledger worker on the NATS server(s) at url (a
// comma-separated list) until ctx ends: a tool server of the ledger tool.
// It prints "ready <worker>" on stdout once it serves. The ledger stream
// gets the replicas of $ReplicasEnv.
func Serve(ctx context.Context, url string, stdout io.Writer) error {
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
	if v := os.Getenv(ReplicasEnv); v != "" {
		if replicas, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("ledger: $%s: %w", ReplicasEnv, err)
		}
	}
	if err := ensureStream(ctx, js, replicas); err != nil {
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
		Name: "chaos-ledger", Tools: []*agentfleet.Tool{tool(js)},
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

// ChildMain runs the program as the ledger worker, and exits, when
// the environment variable Env is set; otherwise it returns at once.
// Call it first thing in main or TestMain of a program that Config's
// LedgerCommand starts.
func ChildMain() {
	url := os.Getenv(Env)
	if url == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := Serve(ctx, url, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos ledger:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
