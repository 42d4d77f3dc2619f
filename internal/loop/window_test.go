package loop_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/llm/llmtest"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/window"
)

// longHistory returns n past turns, each a user message, an assistant
// message calling two tools, their results and a text answer, every
// message about size bytes long.
func longHistory(n, size int) []loop.Entry {
	var out []loop.Entry
	pad := strings.Repeat("x", size)
	for i := range n {
		run := fmt.Sprintf("run%d", i)
		a, b := fmt.Sprintf("t%d#a", i), fmt.Sprintf("t%d#b", i)
		out = append(out, entries(run,
			agentfleet.NewUserMessage(fmt.Sprintf("question %d %s", i, pad)),
			callMsg(a, b),
			result(a, "result a "+pad), result(b, "result b "+pad),
			answer(fmt.Sprintf("answer %d %s", i, pad)),
		)...)
	}
	return out
}

// llmSession is a session whose model is a real client of an llmtest
// server.
func llmSession(t *testing.T, srv *llmtest.Server, cfg loop.Config, ts ...*agentfleet.Tool) (*loop.Session, *events) {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: srv.BaseURL(), MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	return newSession(t, client, cfg, ts...)
}

// checkWirePairs fails unless every tool message of req follows an
// assistant message that made its call, every call has its result, and the
// first message after the system prompt is a user message.
func checkWirePairs(t *testing.T, req llmtest.Request) {
	t.Helper()
	msgs := req.Messages
	if len(msgs) < 2 || msgs[0].Role != "system" || msgs[1].Role != "user" {
		t.Fatalf("the request does not begin with the system prompt and a user message: %d messages", len(msgs))
	}
	open := map[string]bool{}
	for i, m := range msgs {
		if m.Role == "tool" {
			if !open[m.ToolCallID] {
				t.Errorf("message %d: result of %s without its call before it", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			continue
		}
		for id := range open {
			t.Errorf("message %d: call %s has no result before it", i, id)
		}
		open = map[string]bool{}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	for id := range open {
		t.Errorf("call %s has no result at the end", id)
	}
}

func eventsOf(ev *events, typ agentfleet.EventType) []agentfleet.Event {
	var out []agentfleet.Event
	for _, e := range ev.list() {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestLongHistorySendsBoundedRequest gives a session a history of some 44
// thousand tokens and a window of 8000: the request the server receives
// fits the window, ends with the new message, keeps the system prompt, and
// parts no tool call from its result; a context.compacted event says what
// was left out.
func TestLongHistorySendsBoundedRequest(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.TextReply("ok").Response())
	hist := longHistory(100, 400)
	full := 0
	for _, e := range hist {
		full += window.MessageBytes(e.Message)
	}
	s, ev := llmSession(t, srv, loop.Config{History: hist, SystemPrompt: "be brief", Context: window.Policy{Window: 8000, ReserveOutput: 1000}})
	if final := wait(t, s.Send(agentfleet.NewUserMessage("what now?"))); final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("stop reason %s (%s)", final.StopReason, final.ErrorMessage)
	}
	req := srv.Requests()[0]
	if got := req.Messages[0].Text(); got != "be brief" {
		t.Errorf("system prompt %q", got)
	}
	if last := req.Messages[len(req.Messages)-1]; last.Role != "user" || last.Text() != "what now?" {
		t.Errorf("last message %s %q, want the new user message", last.Role, last.Text())
	}
	checkWirePairs(t, req)
	// 8000 tokens at four bytes each, and the JSON around the messages.
	if n := len(req.Body); n > 8000*4*5/4 || n >= full/4 {
		t.Errorf("request body of %d bytes for a window of 8000 tokens (the history has %d bytes)", n, full)
	}
	if got := len(req.Messages); got >= len(hist)/4 {
		t.Errorf("%d messages sent of %d", got, len(hist)+1)
	}
	cs := eventsOf(ev, agentfleet.EventContextCompacted)
	if len(cs) != 1 {
		t.Fatalf("%d context.compacted events, want 1", len(cs))
	}
	c := cs[0]
	if c.Strategy != "truncate" || c.Reason != window.CompactWindow || c.DroppedTurns == 0 || c.DroppedMessages != 5*c.DroppedTurns ||
		c.TokensAfter > 7000 || c.TokensBefore < 40000 {
		t.Errorf("context.compacted %+v", c)
	}
	if got, want := len(req.Messages), 1+len(hist)+1-c.DroppedMessages; got != want {
		t.Errorf("%d messages sent, want %d (all but the dropped ones, and the system prompt)", got, want)
	}
	if got := len(s.History()); got != len(hist)+2 {
		t.Errorf("history holds %d messages, want all %d", got, len(hist)+2)
	}
}

// TestUsageCalibratesTheEstimate answers a first request with a prompt
// token count twice the default estimate's: the next request is about
// half as long.
func TestUsageCalibratesTheEstimate(t *testing.T) {
	srv := llmtest.NewServer(t)
	s, _ := llmSession(t, srv, loop.Config{History: longHistory(100, 400), Context: window.Policy{Window: 8000, ReserveOutput: 1000}})
	first := llmtest.TextReply("ok")
	first.Usage = &llmtest.Usage{PromptTokens: 13000, CompletionTokens: 1, TotalTokens: 13001}
	srv.Enqueue(first.Response(), llmtest.TextReply("ok").Response())
	wait(t, s.Send(agentfleet.NewUserMessage("one")))
	wait(t, s.Send(agentfleet.NewUserMessage("two")))
	reqs := srv.Requests()
	a, b := len(reqs[0].Body), len(reqs[1].Body)
	if b > a*6/10 || b < a*3/10 {
		t.Errorf("request bodies of %d then %d bytes, want the second about half the first", a, b)
	}
	checkWirePairs(t, reqs[1])
}

// TestContextLengthExceededCompactsAndRetries has the server refuse the
// first request as too long, in the words of several servers: the loop
// compacts the request once and sends it again, and the run ends well. A
// 400 that says something else ends the run with the error, after one
// request.
func TestContextLengthExceededCompactsAndRetries(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
		retry  bool
	}{
		{"openai code", 400, `{"error":{"message":"Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, true},
		{"openai message", 400, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error"}}`, true},
		{"llama.cpp", 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}`, true},
		{"plain 413", 413, `too many tokens in the prompt`, true},
		{"other 400", 400, `{"error":{"message":"temperature must be below 2","type":"invalid_request_error"}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Response{Status: c.status, Body: c.body}, llmtest.TextReply("fine").Response())
			hist := longHistory(30, 400)
			s, ev := llmSession(t, srv, loop.Config{History: hist})
			final := wait(t, s.Send(agentfleet.NewUserMessage("go on")))
			if !c.retry {
				if final.StopReason != agentfleet.StopReasonError || srv.Count() != 1 || len(eventsOf(ev, agentfleet.EventContextCompacted)) != 0 {
					t.Fatalf("stop reason %s after %d requests, %d compactions; want error after 1, none", final.StopReason, srv.Count(), len(eventsOf(ev, agentfleet.EventContextCompacted)))
				}
				return
			}
			if final.StopReason != agentfleet.StopReasonStop || agentfleet.JoinText(final.Content) != "fine" {
				t.Fatalf("stop reason %s (%s), want stop with the retried answer", final.StopReason, final.ErrorMessage)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests, want 2", len(reqs))
			}
			if a, b := len(reqs[0].Messages), len(reqs[1].Messages); a != len(hist)+2 || b >= a {
				t.Errorf("%d messages refused, %d sent again; want the whole history refused and fewer sent", a, b)
			}
			if a, b := len(reqs[0].Body), len(reqs[1].Body); b > a*6/10 {
				t.Errorf("%d bytes refused, %d sent again; want at most about half", a, b)
			}
			checkWirePairs(t, reqs[1])
			if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Text() != "go on" {
				t.Errorf("the retry ends with %q, want the current message", last.Text())
			}
			cs := eventsOf(ev, agentfleet.EventContextCompacted)
			if len(cs) != 1 || cs[0].Reason != window.CompactContextLength || cs[0].DroppedMessages == 0 {
				t.Errorf("context.compacted events %+v, want one for context_length_exceeded", cs)
			}
			if n := len(eventsOf(ev, agentfleet.EventError)); n != 0 {
				t.Errorf("%d error events", n)
			}
		})
	}
}

// TestBudgetsEndTheRun runs into each budget: the run ends with stop
// reason budget after a budget.exceeded event naming it, and the model is
// asked no further.
func TestBudgetsEndTheRun(t *testing.T) {
	usage := func(r llmtest.Reply) llmtest.Response {
		r.Usage = &llmtest.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}
		return r.Response()
	}
	echo := llmtest.ToolCall{Name: "echo", Arguments: `{}`}
	spent := answer("earlier")
	spent.Usage = &agentfleet.Usage{InputTokens: 900, OutputTokens: 100, TotalTokens: 1000}
	for _, c := range []struct {
		name       string
		budget     window.Budget
		history    []loop.Entry
		replies    []llmtest.Response
		requests   int
		limit, use int
		which      string
	}{
		{"tokens per run", window.Budget{MaxTokensPerRun: 200}, nil,
			[]llmtest.Response{usage(llmtest.ToolCallsReply(echo)), usage(llmtest.ToolCallsReply(echo)), usage(llmtest.TextReply("never"))},
			2, 200, 220, window.BudgetTokensPerRun},
		{"tokens per session", window.Budget{MaxTokensPerSession: 500}, entries("old", agentfleet.NewUserMessage("hi"), spent),
			[]llmtest.Response{usage(llmtest.TextReply("never"))},
			0, 500, 1000, window.BudgetTokensPerSession},
		{"tool calls per run", window.Budget{MaxToolCallsPerRun: 2}, nil,
			[]llmtest.Response{usage(llmtest.ToolCallsReply(echo)), usage(llmtest.ToolCallsReply(echo, echo)), usage(llmtest.TextReply("never"))},
			2, 2, 3, window.BudgetToolCallsPerRun},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(c.replies...)
			s, ev := llmSession(t, srv, loop.Config{Budget: c.budget, History: c.history}, tool("echo", true, text("echoed")))
			final := wait(t, s.Send(agentfleet.NewUserMessage("go")))
			if final.StopReason != agentfleet.StopReasonBudget || !strings.Contains(final.ErrorMessage, c.which) {
				t.Fatalf("stop reason %s (%s), want budget %s", final.StopReason, final.ErrorMessage, c.which)
			}
			if got := srv.Count(); got != c.requests {
				t.Errorf("%d model requests, want %d", got, c.requests)
			}
			bs := eventsOf(ev, agentfleet.EventBudgetExceeded)
			if len(bs) != 1 || bs[0].Budget != c.which || bs[0].Limit != c.limit || bs[0].Used != c.use {
				t.Errorf("budget.exceeded events %+v, want one for %s at %d, used %d", bs, c.which, c.limit, c.use)
			}
			all := ev.list()
			if last := all[len(all)-1]; last.Type != agentfleet.EventRunEnd || last.StopReason != agentfleet.StopReasonBudget {
				t.Errorf("last event %s %s, want run.end budget", last.Type, last.StopReason)
			}
		})
	}
}

// TestToolCallBudgetAnswersTheCalls checks that the calls refused by the
// tool call budget get results, so that the next run of the session sends
// a valid request.
func TestToolCallBudgetAnswersTheCalls(t *testing.T) {
	srv := llmtest.NewServer(t)
	echo := llmtest.ToolCall{Name: "echo", Arguments: `{}`}
	srv.Enqueue(llmtest.ToolCallsReply(echo, echo).Response(), llmtest.TextReply("next").Response())
	s, ev := llmSession(t, srv, loop.Config{Budget: window.Budget{MaxToolCallsPerRun: 1}}, tool("echo", true, text("echoed")))
	wait(t, s.Send(agentfleet.NewUserMessage("go")))
	for _, e := range eventsOf(ev, agentfleet.EventToolEnd) {
		if !e.IsError || e.Outcome != "skipped" || !strings.Contains(agentfleet.JoinText(e.Result.Content), "limit of 1 tool calls") {
			t.Errorf("tool.end %+v, want a skipped call with the budget's text", e)
		}
	}
	if final := wait(t, s.Send(agentfleet.NewUserMessage("again"))); final.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("next run: %s (%s)", final.StopReason, final.ErrorMessage)
	}
	checkWirePairs(t, srv.Requests()[1])
}
