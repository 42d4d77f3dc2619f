package orchestrator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/vmihailenco/msgpack/v5"
)

// TestLargeResultsByReference: a 20 MB result from a Go worker (streamed
// with objref.Put) and one from a worker that speaks only what
// docs/PROTOCOL.md says (a micro service answering a MessagePack result
// frame with a ref block, after putting the bytes in the bucket with the
// plain Object Store client) each reach the client whole (sha256), the
// stored history holds the reference, not the bytes, and the model is
// shown a bounded view: the head of the file and its description.
func TestLargeResultsByReference(t *testing.T) {
	model := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{BaseURL: model.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	f := startFleet(t, orchestrator.Config{Model: client, Durable: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := objref.OpenOn(ctx, bustest.MustConnect(t, f.srv), objref.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const size = 20 << 20
	data := bytes.Repeat([]byte("id,name,amount\n"), size/15+1)[:size]
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	export := tool("export", false, func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
		ref, err := objref.Put(ctx, bytes.NewReader(data), "text/csv", "export.csv")
		return &agentfleet.ToolResult{Content: []agentfleet.Content{ref}}, err
	})
	// Its heartbeats share the connection with 20 MB of chunks: at the
	// fleet tests' 100 ms they can fall three intervals behind on a busy
	// machine under -race, and the call be taken for lost. The test is of
	// payloads; a heartbeat of a second leaves it 3 s.
	f.addWorker(t, toolrpc.ServerConfig{Name: "go", Heartbeat: time.Second, Tools: []*agentfleet.Tool{objref.Offload(export, st)}})
	rawWorker(t, f.srv, data)
	for _, name := range []string{"export", "raw_export"} {
		bustest.Eventually(t, name+" discovered", func() bool { _, ok := find(f.orch, "default", name); return ok })
	}

	for _, name := range []string{"export", "raw_export"} {
		t.Run(name, func(t *testing.T) {
			n := model.Count()
			model.Enqueue(llmtest.ToolCallsReply(llmtest.ToolCall{Name: name, Arguments: `{}`}).Response(), llmtest.TextReply("got it").Response())
			session := "s-" + name
			if final := f.ask(t, "default", session, "export it"); final.StopReason != agentfleet.StopReasonStop {
				t.Fatalf("run: %s (%s)", final.StopReason, final.ErrorMessage)
			}
			var ref agentfleet.Content
			var stored int
			for _, m := range loadHistory(t, f.nc, "default", session).Messages() {
				if tr, ok := m.(*agentfleet.ToolResultMessage); ok {
					for _, c := range tr.Content {
						stored += len(c.Text) + len(c.Data)
						if c.Type == agentfleet.ContentRef {
							ref = c
						}
					}
				}
			}
			if ref.Size != size || ref.SHA256 != want {
				t.Fatalf("stored ref %+v, want %d bytes, sha256 %s", ref, size, want)
			}
			if stored > 20<<10 {
				t.Errorf("the stored result holds %d bytes of text and data, want a bounded view", stored)
			}
			r, _, err := st.Open(ctx, ref.Ref)
			if err != nil {
				t.Fatal(err)
			}
			got := sha256.New()
			if _, err := io.Copy(got, r); err != nil {
				t.Fatal(err)
			}
			r.Close()
			if hex.EncodeToString(got.Sum(nil)) != want {
				t.Errorf("the object read back has another sha256")
			}
			body := model.Requests()[n+1].Body
			if len(body) > 64<<10 || !bytes.Contains(body, []byte("id,name,amount")) || !bytes.Contains(body, []byte("[The tool returned a file")) || !bytes.Contains(body, []byte("of 20971520 bytes; the rest is in the file")) {
				t.Errorf("the model's request is %d bytes; want the head and description of the file: %.600s", len(body), body)
			}
		})
	}
}

// rawWorker serves raw_export as a worker in another language would,
// from docs/PROTOCOL.md alone: a micro service with the fleet's metadata
// whose handler decodes the MessagePack call request, puts data in the
// bucket agentfleet_objects as <agent>/<session>/<unique name>, and
// answers one result frame holding a ref block.
func rawWorker(t *testing.T, srv interface{ ClientURL() string }, data []byte) {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	svc, err := micro.AddService(nc, micro.Config{Name: "rawworker", Version: "1.0.0", Metadata: map[string]string{"agentfleet.protocol": "1", "prefix": "agent"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop() })
	handler := micro.HandlerFunc(func(req micro.Request) {
		var call struct {
			ID      string `msgpack:"id"`
			Agent   string `msgpack:"agent"`
			Session string `msgpack:"session"`
		}
		if err := msgpack.Unmarshal(req.Data(), &call); err != nil {
			t.Errorf("raw worker: %v", err)
			return
		}
		obs, err := js.ObjectStore(context.Background(), "agentfleet_objects")
		if err != nil {
			t.Errorf("raw worker: %v", err)
			return
		}
		info, err := obs.Put(context.Background(), jetstream.ObjectMeta{Name: call.Agent + "/" + call.Session + "/raw-" + call.ID}, bytes.NewReader(data))
		if err != nil {
			t.Errorf("raw worker: %v", err)
			return
		}
		sum := sha256.Sum256(data)
		frame, _ := msgpack.Marshal(map[string]any{"t": "result", "id": call.ID, "worker": "rawworker/1", "result": map[string]any{
			"content": []any{map[string]any{"type": "ref", "$ref": "obj://agentfleet_objects/" + info.Name, "size": info.Size, "sha256": hex.EncodeToString(sum[:]), "mime_type": "text/csv"}},
		}})
		req.Respond(frame)
	})
	err = svc.AddEndpoint("raw_export", handler, micro.WithEndpointSubject("agent.tool.raw_export"), micro.WithEndpointQueueGroup("agentfleet"),
		micro.WithEndpointMetadata(map[string]string{"agentfleet.protocol": "1", "description": "exports a table", "input_schema": `{"type":"object"}`}))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("agent.fleet", []byte(`{"event":"joined","service":"rawworker","id":"`+svc.Info().ID+`","tools":["raw_export"]}`)); err != nil {
		t.Fatal(err)
	}
}
