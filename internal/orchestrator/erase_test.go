package orchestrator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDeleteAtEveryPoint deletes a session at each point of its run: as
// it starts, at its first turn, with its tool call in flight (the tool
// returns only once cancelled), once the call ended, once the run ended.
// Each time the store holds nothing of the session right after the
// answer, and still nothing once another session's run went through the
// same orchestrator; an ask of the name then starts afresh, a history of
// its own run alone.
func TestDeleteAtEveryPoint(t *testing.T) {
	points := []agentfleet.EventType{agentfleet.EventRunStart, agentfleet.EventTurnStart, agentfleet.EventToolStart, agentfleet.EventToolEnd, agentfleet.EventRunEnd}
	model := loop.ModelFunc(func(_ context.Context, req *loop.Request, _ loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
		last := req.Messages[len(req.Messages)-1]
		if u, ok := last.(*agentfleet.UserMessage); ok && agentfleet.JoinText(u.Content) == "go" {
			return &agentfleet.AssistantMessage{Model: "scripted", StopReason: agentfleet.StopReasonToolUse, Content: []agentfleet.Content{
				{Type: agentfleet.ContentToolCall, ID: "c1", Name: "slow", Arguments: json.RawMessage(`{}`)}}}, nil
		}
		return &agentfleet.AssistantMessage{Model: "scripted", StopReason: agentfleet.StopReasonStop, Content: []agentfleet.Content{agentfleet.Text("done")}}, nil
	})
	slow := tool("slow", true, func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
		if c, _ := toolrpc.CallerFrom(ctx); c.Session != "p2" {
			return agentfleet.TextResult("quick"), nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, errors.New("the call was not cancelled")
		}
	})
	f := startFleet(t, orchestrator.Config{Model: model, Durable: true}, toolrpc.ServerConfig{Tools: []*agentfleet.Tool{slow}})
	js, _ := jetstream.New(f.nc)
	subjects, _ := bus.NewSubjects("")
	ctx := context.Background()
	held := func(session string) map[string]uint64 {
		t.Helper()
		out := map[string]uint64{}
		for _, tg := range erase.Targets(subjects, "default", session) {
			str, err := js.Stream(ctx, tg.Stream)
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			info, err := str.Info(ctx, jetstream.WithSubjectFilter(tg.Filter))
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range info.State.Subjects {
				if n > 0 {
					out[tg.Stream] += n
				}
			}
		}
		return out
	}
	for i, point := range points {
		s := fmt.Sprintf("p%d", i)
		sub, err := f.nc.SubscribeSync(subjects.Event("default", s, string(point)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.nc.Publish(subjects.Client(bus.KindIn, "default", s), []byte(`{"content":"go","id":"`+s+`-1"}`)); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.NextMsg(20 * time.Second); err != nil {
			t.Fatalf("%s: no %s: %v", s, point, err)
		}
		sub.Unsubscribe()
		m, err := f.nc.Request(erase.Subject(subjects, "default", s), []byte(`{"confirm":"`+s+`"}`), 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep erase.Reply
		if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Deleted == nil {
			t.Fatalf("delete at %s: %s", point, m.Data)
		}
		// Its input went with the stop (refused, so terminated) or with the
		// run's end; its events are purged.
		if rep.Deleted.Messages["AGENT_EVENTS"] == 0 || len(rep.Deleted.Stopped) != 1 {
			t.Errorf("delete at %s: %+v, want its events and the orchestrator that stopped it", point, rep.Deleted)
		}
		if got := held(s); len(got) != 0 {
			t.Fatalf("right after the delete at %s, %s holds %+v", point, s, got)
		}
		if a := f.ask(t, "default", "other", `{"content":"hello"}`); agentfleet.JoinText(a.Content) != "done" {
			t.Fatalf("another session: %+v", a)
		}
		if got := held(s); len(got) != 0 {
			t.Fatalf("once another run went through, %s deleted at %s holds %+v", s, point, got)
		}
		a := f.ask(t, "default", s, `{"content":"afresh"}`)
		if agentfleet.JoinText(a.Content) != "done" {
			t.Fatalf("%s afresh: %+v", s, a)
		}
		st := loadHistory(t, f.nc, "default", s)
		if ended := st.Ended(); len(ended) != 1 || ended[a.RunID] != 1 {
			t.Fatalf("%s afresh holds the runs %v, want %s alone", s, ended, a.RunID)
		}
		for _, r := range st.Records {
			if r.RunID != a.RunID {
				t.Fatalf("%s afresh holds a record of run %s: %s", s, r.RunID, strings.TrimSpace(fmt.Sprint(r.Message)))
			}
		}
	}
}
