package a2aserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/history"
)

// working is a Backend with one agent whose session s1 holds one task
// that works for ever; followed is told of each Follow.
type working struct{ followed chan struct{} }

func (working) Agents() []string { return []string{"default"} }
func (working) Tools(string) ([]agentfleet.ToolDef, bool) {
	return nil, true
}
func (working) Send(context.Context, string, string, string, []agentfleet.Content) error { return nil }
func (working) Load(context.Context, string, string) (*history.Loaded, error) {
	return &history.Loaded{Records: []history.Record{{RunID: "r1", Message: &agentfleet.UserMessage{Role: agentfleet.RoleUser, ID: MessageKey("default", "s1", "m1"), Content: []agentfleet.Content{agentfleet.Text("hi")}}}}}, nil
}
func (w working) Follow(string, string, func(*agentfleet.Event)) (func(), error) {
	w.followed <- struct{}{}
	return func() {}, nil
}
func (working) Abort(context.Context, string, string, string) (*agentfleet.AssistantMessage, error) {
	return &agentfleet.AssistantMessage{}, nil
}
func (working) Decide(context.Context, string, string, *agentfleet.ApprovalDecision) (*agentfleet.ApprovalReply, error) {
	return &agentfleet.ApprovalReply{}, nil
}

// TestMaxWatches: past MaxWatches tasks followed at once, one more
// request that would follow one is refused saying so, and the slot is
// given back when a stream ends.
func TestMaxWatches(t *testing.T) {
	b := working{followed: make(chan struct{}, 4)}
	srv := httptest.NewServer(New(Config{Backend: b, MaxWatches: 1}).Handler())
	defer srv.Close()
	resub := `{"jsonrpc":"2.0","id":1,"method":"tasks/resubscribe","params":{"id":"` + string(TaskID("s1", MessageKey("default", "s1", "m1"))) + `"}}`
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/a2a/default", strings.NewReader(resub))
	first, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	<-b.followed
	resp, err := http.Post(srv.URL+"/a2a/default", "application/json", strings.NewReader(resub))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "follows at most 1 tasks at once") {
		t.Errorf("second stream = %s", body)
	}
	cancel()
	first.Body.Close()
	// The first stream's slot comes back once its handler returns; the
	// next request gets it.
	var last string
	bustest.Eventually(t, "a request served after the stream ended", func() bool {
		resp, err := http.Post(srv.URL+"/a2a/default", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"configuration":{"blocking":false},"message":{"kind":"message","role":"user","messageId":"m2","contextId":"s1","parts":[{"kind":"text","text":"hi"}]}}}`))
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(body)
		return !strings.Contains(last, "at most 1")
	})
	if !strings.Contains(last, `"state":"submitted"`) {
		t.Errorf("after the stream: %s", last)
	}
}

// TestSubmittedWhenNoRunTakesIt: a blocking send whose message no run
// takes within SubmitWait (it waits behind another run) is answered as
// submitted, saying why, and a stream ends with that state, final.
func TestSubmittedWhenNoRunTakesIt(t *testing.T) {
	b := working{followed: make(chan struct{}, 4)}
	srv := httptest.NewServer(New(Config{Backend: b, SubmitWait: 50 * time.Millisecond, Poll: 10 * time.Millisecond}).Handler())
	defer srv.Close()
	for _, method := range []string{"message/send", "message/stream"} {
		resp, err := http.Post(srv.URL+"/a2a/default", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{"message":{"kind":"message","role":"user","messageId":"m3","contextId":"s1","parts":[{"kind":"text","text":"hi"}]}}}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), `"state":"submitted"`) || !strings.Contains(string(body), "it waits in the session's input") {
			t.Errorf("%s = %s", method, body)
		}
		if method == "message/stream" && !strings.Contains(string(body), `"final":true`) {
			t.Errorf("the stream did not end final: %s", body)
		}
	}
}
