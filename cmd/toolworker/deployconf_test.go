package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	busserver "github.com/agentfleet/agentfleet/internal/bus/server"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/fleetexec"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/nats-io/nats-server/v2/server"
)

// syncBuffer collects a child's standard error.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestScriptsUnderDeployConf runs `toolworker --scripts` as the user
// toolworker of deploy/nats/nats.conf, its password from $NATS_PASSWORD,
// in a child process: it starts, serves a scripted tool stored in the
// bucket, whose call_tool reaches a built-in tool, and answers a dry run,
// with no permission violation on either side.
func TestScriptsUnderDeployConf(t *testing.T) {
	conf := filepath.Join("..", "..", "deploy", "nats", "nats.conf")
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	passwords := map[string]string{}
	for _, u := range opts.Users {
		passwords[u.Username] = u.Password
	}
	s, err := busserver.RunEmbedded(busserver.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ConfigFile: conf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	orchLogs := &syncBuffer{}
	orch, err := bus.Connect(bus.ConnectConfig{URL: s.ClientURL(), Name: "orchestrator", User: "orchestrator", Password: passwords["orchestrator"],
		Logger: slog.New(slog.NewTextHandler(orchLogs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(orch.Close)

	// A scripted tool stored before the worker starts, as write_tool
	// stores one; its call_tool reaches the built-in echo.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := scriptfleet.NewStore(ctx, orch, scriptfleet.StoreConfig{})
	if err != nil {
		t.Fatal(err)
	}
	relay := &script.Definition{Name: "relay", Description: "echoes through call_tool",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		Code:        "def execute(args):\n    return call_tool('echo', {'text': 'relayed ' + args['text']})\n"}
	if _, err := store.Put(ctx, relay); err != nil {
		t.Fatal(err)
	}

	joined, err := orch.SubscribeSync("agent.fleet")
	if err != nil {
		t.Fatal(err)
	}
	defer joined.Unsubscribe()
	if err := orch.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_PASSWORD", passwords["toolworker"])
	stderr := &syncBuffer{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOOLWORKER_CHILD_ARGS=--nats-url "+s.ClientURL()+" --user toolworker --scripts --tools echo --name scripted")
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	if strings.Contains(strings.Join(cmd.Args, " "), passwords["toolworker"]) {
		t.Fatal("the password is on the command line")
	}

	// Joined notices come from the built-in and the scripted services;
	// once relay is in the fleet, both serve.
	subjects, _ := bus.NewSubjects("")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := joined.NextMsg(time.Until(deadline)); err != nil {
			select {
			case <-exited:
				t.Fatalf("toolworker --scripts exited (%v):\n%s", waitErr, stderr)
			default:
			}
			t.Fatalf("relay never joined the fleet (%v):\n%s", err, stderr)
		}
		found, err := fleet.Discover(ctx, orch, subjects, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if found["relay"] != nil && found["echo"] != nil {
			break
		}
	}

	client, err := toolrpc.NewToolClient(orch, toolrpc.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	res, err := fleetexec.Executor{Client: client}.Execute(ctx, &pipeline.Prepared{
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "relay", Scripted: true}},
		Call: agentfleet.ToolCall{ID: "c1", Name: "relay"}, Args: map[string]any{"text": "hi"}, Timeout: 20 * time.Second,
		Agent: "default", Allowed: []string{"relay", "echo"},
	}, func(any) {})
	if err != nil {
		t.Fatalf("relay: %v\n%s", err, stderr)
	}
	if got := agentfleet.JoinText(res.Content); !strings.Contains(got, "relayed hi") {
		t.Errorf("relay = %q, want the echo of %q\n%s", got, "relayed hi", stderr)
	}

	// write_tool's dry run, answered by the worker.
	dry := &script.Definition{Name: "upper", Description: "upper case", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    return 'ok'\n"}
	if err := scriptfleet.RemoteDryRun(orch, "agent").DryRun(ctx, dry); err != nil {
		t.Errorf("dry run: %v\n%s", err, stderr)
	}
	// A tool written while the worker runs is served too: the watch of the
	// bucket goes on under these rights.
	if _, err := store.Put(ctx, &script.Definition{Name: "later", Description: "later", InputSchema: json.RawMessage(`{"type":"object"}`),
		Code: "def execute(args):\n    return 'later'\n"}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := joined.NextMsg(time.Until(deadline)); err != nil {
			t.Fatalf("later never joined the fleet (%v):\n%s", err, stderr)
		}
		found, err := fleet.Discover(ctx, orch, subjects, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if found["later"] != nil {
			break
		}
	}
	for who, logs := range map[string]string{"toolworker": stderr.String(), "orchestrator": orchLogs.String()} {
		if strings.Contains(logs, "ermission") {
			t.Errorf("%s met a permission violation:\n%s", who, logs)
		}
	}
}
