// Package nodeworker tests the JavaScript tool worker of this folder
// against a real orchestrator: the proof that docs/PROTOCOL.md is enough to
// write a worker in another language.
package nodeworker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/fleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
)

// nodeWorker is the worker process and the lines it printed.
type nodeWorker struct {
	cmd   *exec.Cmd
	id    string
	lines chan string
}

// startNodeWorker runs worker.mjs as a child process, installing its
// packages first if they are missing, and waits until it serves.
func startNodeWorker(t *testing.T, url string) *nodeWorker {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed, so the JavaScript worker is not tested (install Node.js 20 or later)")
	}
	if _, err := os.Stat("node_modules"); err != nil {
		npm := exec.Command("npm", "ci", "--no-audit", "--no-fund")
		if out, err := npm.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in examples/node-worker: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(node, "worker.mjs")
	cmd.Env = append(os.Environ(), "NATS_URL="+url, "HB_MS=100")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	w := &nodeWorker{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	w.id = strings.TrimPrefix(w.next(t, "ready "), "ready ")
	return w
}

// next waits for a line that starts with prefix.
func (w *nodeWorker) next(t *testing.T, prefix string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("the worker exited before printing %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("the worker did not print %q within 30s", prefix)
		}
	}
}

func events(t *testing.T, nc *nats.Conn, subject string) *nats.Subscription {
	t.Helper()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	// The server has the subscription before anything the test does next.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

func nextEvent(t *testing.T, sub *nats.Subscription) *agentfleet.Event {
	t.Helper()
	m, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no event on %s: %v", sub.Subject, err)
	}
	var e agentfleet.Event
	if err := json.Unmarshal(m.Data, &e); err != nil {
		t.Fatal(err)
	}
	return &e
}

func TestNodeWorker(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	w := startNodeWorker(t, srv.ClientURL())

	model := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{BaseURL: model.BaseURL()})
	if err != nil {
		t.Fatal(err)
	}
	o, err := orchestrator.New(bustest.MustConnect(t, srv), orchestrator.Config{Model: client, Discovery: fleet.FleetConfig{Wait: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())

	t.Run("discovery", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.WaitTool(ctx, "countdown", true); err != nil {
			t.Fatalf("countdown not discovered: %v", err)
		}
		defs, _ := o.Tools("default")
		for _, d := range defs {
			if d.Name == "countdown" && (!d.Annotations.ReadOnly || !d.Annotations.Idempotent || !d.Parallel || d.TimeoutMS != 60000) {
				t.Errorf("countdown as discovered: %+v", d)
			}
		}
	})

	t.Run("model-driven call", func(t *testing.T) {
		updates := events(t, nc, "agent.events.default.m.tool.update")
		ends := events(t, nc, "agent.events.default.m.tool.end")
		model.Enqueue(llmtest.ToolCallsReply(llmtest.ToolCall{Name: "countdown", Arguments: `{"n":3,"ms":20}`}).Response(),
			llmtest.TextReply("it counted").Response())
		reply, err := nc.Request("agent.ask.default.m", []byte("count down from 3"), 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var final agentfleet.AssistantMessage
		json.Unmarshal(reply.Data, &final)
		if agentfleet.JoinText(final.Content) != "it counted" || final.StopReason != agentfleet.StopReasonStop {
			t.Errorf("final = %s %q", final.StopReason, agentfleet.JoinText(final.Content))
		}
		if u := nextEvent(t, updates); !strings.Contains(string(mustJSON(u.Partial)), `"left":2`) {
			t.Errorf("first progress = %s, want left 2", mustJSON(u.Partial))
		}
		e := nextEvent(t, ends)
		if e.IsError || agentfleet.JoinText(e.Result.Content) != "counted down from 3" || e.Worker != "nodeworker/"+w.id {
			t.Errorf("tool.end = error %v %q from %q", e.IsError, agentfleet.JoinText(e.Result.Content), e.Worker)
		}
	})

	t.Run("large result by reference", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := o.WaitTool(ctx, "export_rows", true); err != nil {
			t.Fatalf("export_rows not discovered: %v", err)
		}
		ends := events(t, nc, "agent.events.default.big.tool.end")
		const rows = 1_400_000 // about 20 MB of CSV
		model.Enqueue(llmtest.ToolCallsReply(llmtest.ToolCall{Name: "export_rows", Arguments: fmt.Sprintf(`{"rows":%d}`, rows)}).Response(),
			llmtest.TextReply("exported").Response())
		if _, err := nc.Request("agent.ask.default.big", []byte("export"), time.Minute); err != nil {
			t.Fatal(err)
		}
		e := nextEvent(t, ends)
		var ref agentfleet.Content
		for _, c := range e.Result.Content {
			if c.Type == agentfleet.ContentRef {
				ref = c
			}
		}
		var want bytes.Buffer
		for i := 0; i < rows; i++ {
			fmt.Fprintf(&want, "%d,row %d\n", i, i)
		}
		sum := sha256.Sum256(want.Bytes())
		if e.IsError || ref.Size != int64(want.Len()) || ref.SHA256 != hex.EncodeToString(sum[:]) {
			t.Fatalf("tool.end: error %v, ref %+v; want %d bytes, sha256 %x", e.IsError, ref, want.Len(), sum)
		}
		st, err := objref.OpenOn(ctx, nc, objref.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := st.Open(ctx, ref.Ref)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil || !bytes.Equal(h.Sum(nil), sum[:]) {
			t.Errorf("read back: %v, sha256 %x, want %x", err, h.Sum(nil), sum)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		updates := events(t, nc, "agent.events.default.c.tool.update")
		runEnd := events(t, nc, "agent.events.default.c.run.end")
		model.Enqueue(llmtest.ToolCallsReply(llmtest.ToolCall{Name: "countdown", Arguments: `{"n":1000,"ms":20}`}).Response())
		if err := nc.Publish("agent.in.default.c", []byte("count down from 1000")); err != nil {
			t.Fatal(err)
		}
		nextEvent(t, updates) // the call runs on the worker
		if err := nc.Publish("agent.abort.default.c", []byte("stop")); err != nil {
			t.Fatal(err)
		}
		if e := nextEvent(t, runEnd); e.StopReason != agentfleet.StopReasonAborted {
			t.Errorf("run ended with %s, want aborted", e.StopReason)
		}
		w.next(t, "cancelled ")
	})

	t.Run("heartbeats only", func(t *testing.T) {
		// Ten steps of 100 ms with no frame but heartbeats: the call
		// outlives three heartbeat intervals many times over.
		updates := events(t, nc, "agent.events.default.q.tool.update")
		ends := events(t, nc, "agent.events.default.q.tool.end")
		model.Enqueue(llmtest.ToolCallsReply(llmtest.ToolCall{Name: "countdown", Arguments: `{"n":10,"ms":100,"quiet":true}`}).Response(),
			llmtest.TextReply("quietly done").Response())
		if _, err := nc.Request("agent.ask.default.q", []byte("count quietly"), 20*time.Second); err != nil {
			t.Fatal(err)
		}
		e := nextEvent(t, ends)
		if e.IsError || agentfleet.JoinText(e.Result.Content) != "counted down from 10" {
			t.Errorf("tool.end = error %v %q (%s)", e.IsError, agentfleet.JoinText(e.Result.Content), e.Outcome)
		}
		if n, _, _ := updates.Pending(); n != 0 {
			t.Errorf("%d tool.update events for a quiet call", n)
		}
	})

	t.Run("SIGTERM", func(t *testing.T) {
		left := events(t, nc, "agent.fleet")
		if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// Presence beats may come first; the left notice follows them.
		deadline := time.Now().Add(10 * time.Second)
		for {
			m, err := left.NextMsg(time.Until(deadline))
			if err != nil {
				t.Fatalf("no left notice (%v)", err)
			}
			if strings.Contains(string(m.Data), `"left"`) {
				break
			}
		}
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("worker exit: %v, want status 0", err)
		}
	})
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
