package orchestrator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
)

// TestSessionHistoryServed asks a durable orchestrator for a session's
// records page by page, as agentctl history does, and checks the pages
// against what the stream holds: every record once, in order, with its
// sequence, run id, writer and kind.
func TestSessionHistoryServed(t *testing.T) {
	model := newScript().on("h", use(`echo {"text":"a"}`), say("done"))
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	out := outs(t, f.nc, "default", "h")
	for i := range 3 {
		publish(t, f.nc, "agent.in.default.h", "", fmt.Sprintf(`{"content":"turn %d","id":"u%d"}`, i, i))
		next(t, out)
	}
	st := loadHistory(t, f.nc, "default", "h")
	var want []string
	for _, r := range st.Records {
		kind := "end"
		if r.Message != nil {
			kind = r.Message.MessageRole()
		}
		want = append(want, fmt.Sprintf("%d.%d %s %s %s", r.Seq, r.Index, r.RunID, r.Writer, kind))
	}
	subjects, _ := bus.NewSubjects("")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	pages := 0
	for req := (client.HistoryRequestJSON{Limit: 2}); ; pages++ {
		page, err := client.History(ctx, f.nc, subjects, "default", "h", req)
		if err != nil {
			t.Fatal(err)
		}
		if page.LastSeq != st.LastSeq {
			t.Errorf("last_seq = %d, want %d", page.LastSeq, st.LastSeq)
		}
		for _, r := range page.Records {
			got = append(got, fmt.Sprintf("%d.%d %s %s %s", r.Seq, r.Index, r.RunID, r.Writer, r.Kind))
		}
		if page.Next == 0 {
			break
		}
		req.FromSeq = page.Next
	}
	if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w || len(want) < 9 {
		t.Errorf("served records:\n%s\nstored (want at least 9):\n%s", g, w)
	}
	if pages < 2 {
		t.Errorf("%d pages of at most 2 records, want several", pages+1)
	}
	if _, err := client.History(ctx, f.nc, subjects, "nobody", "h", client.HistoryRequestJSON{}); err == nil || !strings.Contains(err.Error(), `unknown agent "nobody"`) {
		t.Errorf("history of an unknown agent: %v", err)
	}
	empty, err := client.History(ctx, f.nc, subjects, "default", "never", client.HistoryRequestJSON{})
	if err != nil || len(empty.Records) != 0 || empty.LastSeq != 0 {
		t.Errorf("history of a session never stored = %+v, %v; want empty", empty, err)
	}
}

// TestSessionHistoryInMemory: an orchestrator without JetStream says it
// keeps no history, instead of answering with an empty one.
func TestSessionHistoryInMemory(t *testing.T) {
	f := startFleet(t, orchestrator.Config{Model: newScript()}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{echo("echo")}})
	subjects, _ := bus.NewSubjects("")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client.History(ctx, f.nc, subjects, "default", "h", client.HistoryRequestJSON{}); err == nil || !strings.Contains(err.Error(), "no stored history here") {
		t.Errorf("history in memory: %v, want the reason there is none", err)
	}
}
