package approval_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/approval"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

func TestPolicyNeeds(t *testing.T) {
	destructive := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "rm", Annotations: agentfleet.Annotations{Destructive: true}}}
	plain := &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "delete_file"}}
	for _, tc := range []struct {
		name string
		p    approval.Policy
		tool *agentfleet.Tool
		want bool
	}{
		{"none", approval.Policy{}, destructive, false},
		{"destructive", approval.Policy{Destructive: true}, destructive, true},
		{"destructive only", approval.Policy{Destructive: true}, plain, false},
		{"glob", approval.Policy{Tools: []string{"delete_*"}}, plain, true},
		{"name", approval.Policy{Tools: []string{"rm"}}, destructive, true},
		{"other name", approval.Policy{Tools: []string{"rm"}}, plain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.Needs(tc.tool); got != tc.want {
				t.Errorf("Needs(%s) = %v, want %v", tc.tool.Name, got, tc.want)
			}
		})
	}
	if err := (&approval.Policy{Tools: []string{"[bad"}}).Check(); err == nil {
		t.Error("a bad glob passed Check")
	}
}

func before(call string) *pipeline.BeforeContext {
	return &pipeline.BeforeContext{
		Call: agentfleet.ToolCall{ID: call, Name: "rm"}, Args: map[string]any{"path": "/tmp/x"},
		Tool: &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: "rm"}}, RunID: "r1",
		Sink: agentfleet.EventSinkFunc(func(*agentfleet.Event) {}),
	}
}

// answers collects the replies a gate gives.
type answers struct {
	mu  sync.Mutex
	got []*agentfleet.ApprovalReply
}

func (a *answers) answer(r *agentfleet.ApprovalReply, final bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, r)
}

// TestGateRestoredDecision restores a call that waited and a decision
// stored while its run was not running: the hook acts on it without
// storing anything again, and the same decision delivered again is
// answered as taken.
func TestGateRestoredDecision(t *testing.T) {
	stores := 0
	g := approval.New(approval.Config{Policy: approval.Policy{Tools: []string{"rm"}},
		StoreRequest:  func(context.Context, string, *agentfleet.ApprovalRequest) error { stores++; return nil },
		StoreDecision: func(context.Context, string, *agentfleet.ApprovalDecision) error { stores++; return nil },
	})
	now := time.Now().UTC()
	g.Restore("r1", &agentfleet.ApprovalRequest{ToolCallID: "c1", ToolName: "rm", Requested: now, Deadline: now.Add(time.Hour)}, nil)
	if !g.Unexecuted("c1") || len(g.Pending()) != 1 {
		t.Fatalf("restored call: unexecuted %v, pending %v", g.Unexecuted("c1"), g.Pending())
	}
	g.Restore("r1", nil, &agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: false, Reason: "no", ID: "d1", Decided: now})
	res, err := g.Hook(context.Background(), before("c1"))
	if err != nil || res == nil || !res.Block || !strings.Contains(res.Reason, "rejected: no") {
		t.Fatalf("hook = %+v, %v", res, err)
	}
	if stores != 0 {
		t.Errorf("%d records stored again", stores)
	}
	var a answers
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: false, ID: "d1"}, a.answer)
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true, ID: "d2"}, a.answer)
	if len(a.got) != 2 || !a.got[0].OK || a.got[1].OK || a.got[1].DecisionID != "d1" {
		t.Errorf("replies = %+v %+v, want d1 taken and d2 told d1 won", a.got[0], a.got[1])
	}
}

// TestGateRace decides one waiting call from many goroutines at once:
// exactly one decision wins, and every other is told which.
func TestGateRace(t *testing.T) {
	g := approval.New(approval.Config{Policy: approval.Policy{Tools: []string{"rm"}}})
	var events sync.WaitGroup
	events.Add(1)
	in := before("c1")
	in.Sink = agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
		if e.Decision == agentfleet.ApprovalPending {
			events.Done()
		}
	})
	done := make(chan *pipeline.BeforeResult, 1)
	go func() {
		res, _ := g.Hook(context.Background(), in)
		done <- res
	}()
	events.Wait()
	var a answers
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			id := "d" + string(rune('0'+i))
			g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: i%2 == 0, Reason: "by " + id, ID: id}, a.answer)
		})
	}
	wg.Wait()
	<-done
	a.mu.Lock()
	defer a.mu.Unlock()
	won := ""
	for _, r := range a.got {
		if r.OK {
			if won != "" {
				t.Fatalf("two decisions won: %s and %s", won, r.DecisionID)
			}
			won = r.DecisionID
		}
	}
	for _, r := range a.got {
		if !r.OK && r.DecisionID != won {
			t.Errorf("a loser was told %s won, the winner is %s", r.DecisionID, won)
		}
	}
	if won == "" || len(a.got) != 8 {
		t.Errorf("winner %q, %d replies", won, len(a.got))
	}
}

// TestGateSameChoice decides a call twice alike under two ids, as a
// decision sent as a request reaches the owner (relayed with its reply, and
// from the approve stream without one): the second hears that the first
// acts; a third that differs only in its reason or its edit is refused and
// told which won.
func TestGateSameChoice(t *testing.T) {
	g := approval.New(approval.Config{Policy: approval.Policy{Tools: []string{"rm"}}})
	now := time.Now().UTC()
	g.Restore("r1", &agentfleet.ApprovalRequest{ToolCallID: "c1", ToolName: "rm", Requested: now, Deadline: now.Add(time.Hour)}, nil)
	var a answers
	args := map[string]any{"path": "/tmp/x", "n": 1.0}
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true, Reason: "ok", Arguments: args, ID: "js-7"}, a.answer)
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true, Reason: "ok", Arguments: map[string]any{"n": 1.0, "path": "/tmp/x"}, ID: "approve-1"}, a.answer)
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true, Reason: "other", Arguments: args, ID: "approve-2"}, a.answer)
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true, Reason: "ok", Arguments: map[string]any{"path": "/"}, ID: "approve-3"}, a.answer)
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: false, Reason: "ok", ID: "approve-4"}, a.answer)
	res, err := g.Hook(context.Background(), before("c1"))
	if err != nil || res == nil || res.Block {
		t.Fatalf("hook = %+v, %v; want the call approved", res, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) != 5 {
		t.Fatalf("%d replies, want 5", len(a.got))
	}
	// The refusals are answered at once, the two alike once the decision
	// is stored (by the hook).
	for i, r := range a.got {
		if want := i >= 3; r.OK != want || r.DecisionID != "js-7" {
			t.Errorf("reply %d = %+v, want ok %v naming js-7", i, r, want)
		}
	}
}

// TestGateRepeatedCallID decides a call, then meets a call of a later run
// with the same id: it waits for a decision of its own.
func TestGateRepeatedCallID(t *testing.T) {
	g := approval.New(approval.Config{Policy: approval.Policy{Tools: []string{"rm"}, Timeout: 50 * time.Millisecond}})
	first, err := g.Hook(context.Background(), before("c1"))
	if err != nil || !first.Block || !strings.Contains(first.Reason, "not approved in time") {
		t.Fatalf("first = %+v, %v", first, err)
	}
	in := before("c1")
	in.RunID = "r2"
	pending := make(chan struct{})
	in.Sink = agentfleet.EventSinkFunc(func(e *agentfleet.Event) {
		if e.Decision == agentfleet.ApprovalPending {
			close(pending)
		}
	})
	done := make(chan *pipeline.BeforeResult, 1)
	go func() { res, _ := g.Hook(context.Background(), in); done <- res }()
	<-pending
	var a answers
	g.Decide(&agentfleet.ApprovalDecision{ToolCallID: "c1", Approve: true, ID: "d1"}, a.answer)
	if res := <-done; res == nil || res.Block {
		t.Errorf("second call = %+v, want it approved by its own decision", res)
	}
	if len(a.got) != 1 || !a.got[0].OK {
		t.Errorf("reply = %+v", a.got)
	}
}
