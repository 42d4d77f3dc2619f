package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/erase"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
	"github.com/agentfleet/agentfleet/internal/worker"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// blockingTools are an echo that puts its text in the object store as a
// file of the session, and a sleep that blocks until released, whatever
// its cancellation says, and then tries to put a file too (a tool that
// goes on after its run was stopped).
type blockingTools struct {
	entered  chan string // the session of each sleep that began
	release  chan struct{}
	returned sync.WaitGroup
	mu       sync.Mutex
	late     []error // what each sleep's late file met
}

func (b *blockingTools) tools() []*agentfleet.Tool {
	put := func(ctx context.Context, text string) (*agentfleet.ToolResult, error) {
		ref, err := objref.Put(ctx, strings.NewReader(text), "text/plain", "echo.txt")
		if err != nil {
			return nil, err
		}
		return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("stored"), ref}}, nil
	}
	return []*agentfleet.Tool{
		{ToolDef: agentfleet.ToolDef{Name: "echo", Description: "echo"}, Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return put(ctx, fmt.Sprint(c.Arguments["text"]))
		})},
		{ToolDef: agentfleet.ToolDef{Name: "sleep", Description: "sleep"}, Handler: agentfleet.HandlerFunc(func(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
			b.returned.Add(1)
			defer b.returned.Done()
			caller, _ := toolrpc.CallerFrom(ctx)
			b.entered <- caller.Session
			<-b.release
			res, err := put(ctx, "late result")
			b.mu.Lock()
			b.late = append(b.late, err)
			b.mu.Unlock()
			return res, err
		})},
	}
}

// twoOrchestrators starts two orchestrator processes on url and returns
// them by id, once each owns 32 partitions, with the partition table.
func twoOrchestrators(t *testing.T, url string, js jetstream.JetStream) (map[string]*exec.Cmd, jetstream.KeyValue) {
	t.Helper()
	ctx := context.Background()
	args := "--nats-url " + url + " --workers 0 --lease-ttl 2s --log-level warn --http 127.0.0.1:0"
	procs := map[string]*exec.Cmd{}
	members := func() []string {
		kv, err := js.KeyValue(ctx, "AGENT_MEMBERS")
		if err != nil {
			return nil
		}
		keys, _ := kv.Keys(ctx)
		return keys
	}
	for range 2 {
		cmd := startOrchestrator(t, args)
		bustest.Eventually(t, "the orchestrator to join", func() bool { return len(members()) == len(procs)+1 })
		for _, id := range members() {
			if procs[id] == nil {
				procs[id] = cmd
			}
		}
	}
	parts, err := js.KeyValue(ctx, "AGENT_PARTITIONS")
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "32 partitions each", func() bool {
		n := map[string]int{}
		for p := range bus.Partitions {
			if e, err := parts.Get(ctx, strconv.Itoa(p)); err == nil {
				n[string(e.Value())]++
			}
		}
		ids := members()
		return len(n) == 2 && len(ids) == 2 && n[ids[0]] == 32 && n[ids[1]] == 32
	})
	return procs, parts
}

// ownerOf returns the owner of session's partition.
func ownerOf(t *testing.T, parts jetstream.KeyValue, session string) string {
	t.Helper()
	e, err := parts.Get(context.Background(), strconv.Itoa(bus.Partition("default", session)))
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Value())
}

// sessionOn returns the i-th session name (from prefix) whose partition
// owner is.
func sessionOn(t *testing.T, parts jetstream.KeyValue, owner, prefix string, i int) string {
	t.Helper()
	for n := 0; ; n++ {
		s := fmt.Sprintf("%s%d", prefix, n)
		if ownerOf(t, parts, s) == owner {
			if i == 0 {
				return s
			}
			i--
		}
	}
}

// stored returns what the store holds of session: messages in each of the
// fleet's streams, and objects.
func stored(t *testing.T, js jetstream.JetStream, obs *objref.Store, session string) (map[string]uint64, int64) {
	t.Helper()
	ctx := context.Background()
	out := map[string]uint64{}
	for _, tg := range erase.Targets(mustSubjects(t), "default", session) {
		str, err := js.Stream(ctx, tg.Stream)
		if err != nil {
			continue
		}
		info, err := str.Info(ctx, jetstream.WithSubjectFilter(tg.Filter))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range info.State.Subjects {
			out[tg.Stream] += n
		}
	}
	b, err := obs.SessionBytes(ctx, "default", session)
	if err != nil {
		t.Fatal(err)
	}
	return out, b
}

func deleteSession(t *testing.T, nc *nats.Conn, session string) *erase.Deleted {
	t.Helper()
	m, err := nc.Request(erase.Subject(mustSubjects(t), "default", session), []byte(`{"confirm":"`+session+`"}`), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rep erase.Reply
	if err := json.Unmarshal(m.Data, &rep); err != nil || rep.Error != "" || rep.Deleted == nil {
		t.Fatalf("delete of %s: %s (%v)", session, m.Data, err)
	}
	return rep.Deleted
}

func empty(m map[string]uint64, objects int64) bool {
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return objects == 0
}

// TestDeleteWhileOwnerRuns runs two orchestrator processes on one
// JetStream and deletes sessions of the first (A) in the middle of a run,
// blocked in a tool, until the other (B) answered a delete: A stops the
// session when told, and the store holds nothing of it (history, input,
// decisions, events, objects) right after the answer, and still nothing
// once the blocked tools were let go and returned (storing a file of the
// session, which their worker deletes again: their runs were stopped for
// the delete), A answered an ask of another of its sessions, and an event
// of the deleted session's stopped run could have come. An ask of a
// deleted session's name then starts afresh. Last, A is killed (SIGKILL)
// and a session of its is deleted through B: A is named unanswered, the
// store is emptied all the same, and the name serves anew once B took
// the partition over.
func TestDeleteWhileOwnerRuns(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	subjects := mustSubjects(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tools := &blockingTools{entered: make(chan string, 16), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(tools.release)
		}
	}()
	w, err := worker.Start(bustest.MustConnect(t, srv), worker.Config{Name: "blocking", Tools: []string{"get_time"}, Extra: tools.tools(), Concurrency: 32, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	procs, parts := twoOrchestrators(t, srv.ClientURL(), js)
	var a, b string
	for id := range procs {
		if a == "" || id < a {
			a = id
		}
	}
	for id := range procs {
		if id != a {
			b = id
		}
	}
	obs, err := objref.Open(ctx, js, objref.Config{})
	if err != nil {
		t.Fatal(err)
	}

	var deleted []string
	for i := 0; ; i++ {
		if i == 12 {
			t.Fatalf("12 deletes, none answered by %s", b)
		}
		s := sessionOn(t, parts, a, "live", i)
		if _, err := client.Ask(ctx, nc, subjects, "default", s, "echo "+strings.Repeat("private ", 20), nil); err != nil {
			t.Fatalf("ask %s: %v", s, err)
		}
		if err := nc.Publish(subjects.Client(bus.KindIn, "default", s), []byte(`{"content":"sleep 60000","id":"`+s+`-2"}`)); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-tools.entered:
			if got != s {
				t.Fatalf("a sleep of %s began, want %s", got, s)
			}
		case <-ctx.Done():
			t.Fatalf("the run of %s did not reach its tool", s)
		}
		if m, objects := stored(t, js, obs, s); m["AGENT_HISTORY"] == 0 || m["AGENT_EVENTS"] == 0 || m["AGENT_INPUT"] == 0 || objects == 0 {
			t.Fatalf("before the delete %s holds %+v and %d bytes of objects, want some of each", s, m, objects)
		}
		started := time.Now()
		d := deleteSession(t, nc, s)
		t.Logf("delete of %s, live on %s, answered by %s in %v", s, a, d.By, time.Since(started).Round(time.Millisecond))
		deleted = append(deleted, s)
		if len(d.Stopped) != 1 || d.Stopped[0] != a || d.Objects != 1 || d.Messages["AGENT_HISTORY"] == 0 {
			t.Fatalf("deleted %+v, want stopped by %s, its history and its object", d, a)
		}
		if m, objects := stored(t, js, obs, s); !empty(m, objects) {
			t.Fatalf("right after the delete %s holds %+v and %d bytes of objects", s, m, objects)
		}
		if d.By == b {
			break
		}
	}
	// Let the tools go on: each returns and tries to store a file.
	close(tools.release)
	released = true
	tools.returned.Wait()
	for i, err := range tools.late {
		t.Logf("late file %d: %v", i+1, err)
	}
	// A answers an ask of another session: it has handled what the
	// returned tools sent it.
	other := sessionOn(t, parts, a, "other", 0)
	if _, err := client.Ask(ctx, nc, subjects, "default", other, "echo still here", nil); err != nil {
		t.Fatalf("ask %s on %s: %v", other, a, err)
	}
	for _, s := range deleted {
		if m, objects := stored(t, js, obs, s); !empty(m, objects) {
			t.Errorf("after the tools returned %s holds %+v and %d bytes of objects", s, m, objects)
		}
	}
	// The name serves anew: a fresh session, whose history holds only its
	// own run.
	s := deleted[0]
	final, err := client.Ask(ctx, nc, subjects, "default", s, "echo again", nil)
	if err != nil || final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("ask the deleted %s again: %+v %v", s, final, err)
	}
	hs, err := history.Attach(ctx, js, subjects)
	if err != nil {
		t.Fatal(err)
	}
	st, err := hs.Load(ctx, "default", s)
	if err != nil {
		t.Fatal(err)
	}
	if runs := st.Ended(); len(runs) != 1 || len(st.Records) == 0 || st.Records[0].RunID != final.RunID {
		t.Fatalf("the new %s holds %d records of %d runs, want its one run %s", s, len(st.Records), len(runs), final.RunID)
	}

	// A killed: its session is deleted through B, which waits for A's
	// answer in vain.
	dead := sessionOn(t, parts, a, "dead", 0)
	if _, err := client.Ask(ctx, nc, subjects, "default", dead, "echo before the kill", nil); err != nil {
		t.Fatal(err)
	}
	if err := procs[a].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	procs[a].Wait()
	started := time.Now()
	d := deleteSession(t, nc, dead)
	t.Logf("delete of %s, its owner killed, answered in %v", dead, time.Since(started).Round(time.Millisecond))
	if d.By != b || len(d.Stopped) != 0 || len(d.Unanswered) != 1 || d.Unanswered[0] != a || d.Objects != 1 {
		t.Fatalf("delete with its owner killed: %+v, want by %s, %s unanswered, its object", d, b, a)
	}
	if m, objects := stored(t, js, obs, dead); !empty(m, objects) {
		t.Fatalf("after the delete %s holds %+v and %d bytes of objects", dead, m, objects)
	}
	bustest.Eventually(t, "the other orchestrator to own the partition", func() bool { return ownerOf(t, parts, dead) == b })
	if final, err := client.Ask(ctx, nc, subjects, "default", dead, "echo afresh", nil); err != nil || final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("ask %s afresh: %+v %v", dead, final, err)
	}
	if st, err := hs.Load(ctx, "default", dead); err != nil || len(st.Ended()) != 1 {
		t.Fatalf("the new %s: %v runs, %v", dead, len(st.Ended()), err)
	}
}
