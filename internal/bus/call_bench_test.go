package bus_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// BenchmarkCallWithEvents measures one whole tool call as a session makes
// it, with both sides in this process: the pipeline's prepare, execute and
// finalize, tool.start and tool.end published on a real server, the tool
// client, and a worker serving an echo tool. Its allocations are the
// call's, both sides together.
func BenchmarkCallWithEvents(b *testing.B) {
	srv := bustest.MustRunNATS(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	text := strings.Repeat("x", 200)
	serveEcho(b, srv)
	nc := bustest.MustConnect(b, srv)
	c, err := bus.NewToolClient(nc, bus.ClientConfig{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	subjects, _ := bus.NewSubjects("")
	sink := &benchEnvelope{next: bus.NewPublisher(nc, subjects, quiet)}
	store := tools.NewStore("bench")
	if err := store.Register(&agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echo", Parallel: true}}); err != nil {
		b.Fatal(err)
	}
	p := pipeline.New(pipeline.Config{Executor: c, Sink: sink, Agent: "bench", Session: "s1", RunID: "r1"})
	pctx := &pipeline.Context{Tools: store}
	args := map[string]any{"text": text}
	var ids atomic.Uint64
	call := func() {
		out := p.Run(context.Background(), pctx, nil, []agentfleet.ToolCall{{ID: "call_" + strconv.FormatUint(ids.Add(1), 36), Name: "echo", Arguments: args}}).Outcomes[0]
		if out.IsError || agentfleet.JoinText(out.Result.Content) != text {
			b.Fatalf("outcome %+v", out.Result)
		}
	}
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			call()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(32)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				call()
			}
		})
	})
}

// benchEnvelope fills in the envelope of events as a session does.
type benchEnvelope struct {
	seq  atomic.Uint64
	next agentfleet.EventSink
}

func (e *benchEnvelope) Emit(ev *agentfleet.Event) {
	ev.Agent, ev.Session, ev.RunID, ev.Turn = "bench", "s1", "r1", 1
	ev.Seq = e.seq.Add(1)
	ev.Time = time.Now().UTC()
	e.next.Emit(ev)
}
