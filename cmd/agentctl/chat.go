package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/client"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
)

// runEndGrace bounds the wait for a run's run.end event once its answer
// has arrived: the two travel on different subjects.
const runEndGrace = 2 * time.Second

// chatSession is one chat: the agent, the session and the subscriptions
// that every turn shares.
type chatSession struct {
	m              *Main
	agent, session string
	events         *client.Replies
	answers        *client.Replies
	inbox          string
	turns          int
	midLine        bool // the last thing printed was a delta without a newline
	// asking are the calls that wait for approval, oldest first: the next
	// line typed during a run decides the first.
	asking []agentfleet.Event
	lines  <-chan string
}

// chat reads lines from Stdin and sends each on <prefix>.ask, showing the
// session's events while the run goes: the answer as it streams and each
// tool call as it starts and ends. A call that waits for approval is asked
// inline: y approves it, n [reason] rejects it, e <json> approves it with
// those arguments. A Ctrl-C during a run aborts it; a
// second one, a Ctrl-C at the prompt, end of input or "/quit" exits.
func (m *Main) chat(ctx context.Context) error {
	c := &chatSession{m: m, agent: m.pos[0]}
	if len(m.pos) > 1 {
		c.session = m.pos[1]
	} else {
		c.session = strings.ToLower(rand.Text()[:8])
	}
	// The agent first: a chat with an agent no orchestrator has would
	// fail only at the first message. Only a refusal stops it; a user
	// who may not ask for the tools chats as before.
	if reply, err := m.requestAgentTools(ctx, c.agent); err == nil && reply.Error != "" {
		return fmt.Errorf("agent %s: %s", c.agent, reply.Error)
	}
	var err error
	if c.events, err = m.conn.Subscribe(m.eventsSubject(c.agent, c.session)); err != nil {
		return err
	}
	defer c.events.Close()
	c.inbox = m.conn.NewInbox()
	if c.answers, err = m.conn.Subscribe(c.inbox + ".*"); err != nil {
		return err
	}
	defer c.answers.Close()

	lines := make(chan string)
	stop := make(chan struct{})
	defer close(stop)
	go readLines(m.Stdin, lines, stop)
	c.lines = lines

	fmt.Fprintf(m.Stderr, "chat with agent %s, session %s. Ctrl-C aborts a run; Ctrl-C at the prompt, Ctrl-D or /quit exits.\n", c.agent, c.session)
	for {
		fmt.Fprint(m.Stdout, "> ")
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				fmt.Fprintln(m.Stdout)
				return nil
			}
			line = strings.TrimSpace(l)
		case <-m.Interrupt:
			fmt.Fprintln(m.Stdout)
			return nil
		case <-ctx.Done():
			fmt.Fprintln(m.Stdout)
			return nil
		}
		switch line {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}
		if err := c.turn(ctx, line); err != nil {
			return err
		}
	}
}

// readLines sends the lines of r to lines and closes it at the end of r.
func readLines(r io.Reader, lines chan<- string, stop <-chan struct{}) {
	defer close(lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), wire.MaxTextBytes)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-stop:
			return
		}
	}
}

// turn sends one line and shows the run until it ends.
func (c *chatSession) turn(ctx context.Context, text string) error {
	m := c.m
	c.turns++
	reply := c.inbox + "." + strconv.Itoa(c.turns)
	subject := m.subjects.Client(bus.KindAsk, c.agent, c.session)
	if err := m.conn.PublishRequest(subject, reply, payload(text, ""), ""); err != nil {
		return err
	}
	var timeout <-chan time.Time
	if m.Timeout > 0 {
		t := time.NewTimer(m.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var (
		final    *agentfleet.AssistantMessage
		ended    = map[string]bool{} // run ids whose run.end was seen
		streamed bool                // deltas of the answer were printed
		aborting bool
		grace    <-chan time.Time
	)
	for {
		var asked <-chan string // lines answer a call that waits, if any
		if len(c.asking) > 0 {
			asked = c.lines
		}
		select {
		case l, ok := <-asked:
			if !ok {
				c.lines = nil
				continue
			}
			c.answer(ctx, strings.TrimSpace(l))
		case msg := <-c.events.C:
			var e agentfleet.Event
			if err := json.Unmarshal(msg.Data, &e); err != nil {
				c.errorf("event on %s does not decode: %v", msg.Subject, err)
				continue
			}
			switch e.Type {
			case agentfleet.EventMessageStart:
				streamed = false
			case agentfleet.EventMessageUpdate:
				streamed = streamed || e.Delta != ""
			case agentfleet.EventRunEnd:
				ended[e.RunID] = true
			case agentfleet.EventToolApproval:
				c.asked(&e)
			}
			c.show(&e)
			if final != nil && ended[final.RunID] {
				return c.finish(final, streamed)
			}
		case msg := <-c.answers.C:
			if msg.Subject != reply {
				continue // the late answer of an earlier turn
			}
			if client.IsNoResponders(msg) {
				return client.ErrNoListener(subject)
			}
			final = new(agentfleet.AssistantMessage)
			if err := json.Unmarshal(msg.Data, final); err != nil {
				return fmt.Errorf("the answer on %s is not an assistant message: %w", subject, err)
			}
			if final.RunID == "" || ended[final.RunID] {
				// Rejected input has no run; otherwise the run is over.
				return c.finish(final, streamed)
			}
			t := time.NewTimer(runEndGrace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			return c.finish(final, streamed)
		case err := <-m.conn.Denied():
			return err
		case <-m.Interrupt:
			if aborting {
				c.newline()
				fmt.Fprintln(m.Stderr, "interrupted")
				return exitCode(130)
			}
			aborting = true
			c.newline()
			fmt.Fprintln(m.Stderr, "aborting the run (Ctrl-C again to exit)")
			if err := m.publishAbort(c.agent, c.session, "interrupted in agentctl chat"); err != nil {
				c.errorf("abort: %v", err)
			}
		case <-timeout:
			c.newline()
			return fmt.Errorf("no answer on %s within %v (see --timeout)", subject, m.Timeout)
		case <-ctx.Done():
			c.newline()
			if err := m.publishAbort(c.agent, c.session, "agentctl chat stopped"); err != nil {
				c.errorf("abort: %v", err)
			}
			return nil
		}
	}
}

// show prints what the chat shows of an event.
func (c *chatSession) show(e *agentfleet.Event) {
	w := c.m.Stdout
	switch e.Type {
	case agentfleet.EventMessageStart:
		c.newline()
	case agentfleet.EventMessageUpdate:
		if e.Delta != "" {
			fmt.Fprint(w, e.Delta)
			c.midLine = !strings.HasSuffix(e.Delta, "\n")
		}
	case agentfleet.EventToolStart:
		c.newline()
		fmt.Fprintf(w, "→ %s %s\n", e.ToolName, compactJSON(e.Arguments, 200))
	case agentfleet.EventToolEnd:
		c.newline()
		fmt.Fprintf(w, "← %s %s %s\n", e.ToolName, formatMS(e.DurationMS), toolOutcome(e, 200))
	case agentfleet.EventToolApproval:
		c.newline()
		if e.Decision == agentfleet.ApprovalPending {
			fmt.Fprintf(w, "? %s %s waits for approval until %s: y approves, n [reason] rejects, e <json> approves these arguments instead\n",
				e.ToolName, compactJSON(e.Arguments, 200), e.Deadline.Local().Format(time.TimeOnly))
		} else {
			line := "  " + e.ToolName + " " + e.Decision
			if e.Reason != "" {
				line += ": " + e.Reason
			}
			fmt.Fprintln(w, line)
		}
	case agentfleet.EventError:
		c.errorf("error: %s", e.ErrorMessage)
	}
}

// asked keeps track of the calls that wait: a pending one joins the queue,
// a decided one (here or elsewhere) leaves it.
func (c *chatSession) asked(e *agentfleet.Event) {
	c.asking = slices.DeleteFunc(c.asking, func(a agentfleet.Event) bool { return a.ToolCallID == e.ToolCallID })
	if e.Decision == agentfleet.ApprovalPending {
		c.asking = append(c.asking, *e)
	}
}

// answer decides the first call that waits with a line typed during the
// run; a line that is no answer says what is.
func (c *chatSession) answer(ctx context.Context, line string) {
	e := c.asking[0]
	word, rest, _ := strings.Cut(line, " ")
	approve, reason, args := true, "", ""
	switch strings.ToLower(word) {
	case "y", "yes":
	case "n", "no":
		approve, reason = false, strings.TrimSpace(rest)
	case "e", "edit":
		args = strings.TrimSpace(rest)
	default:
		c.errorf("answer %s with y, n [reason] or e <json arguments>", e.ToolName)
		return
	}
	if _, err := c.m.decide(ctx, c.agent, c.session, e.ToolCallID, approve, reason, args); err != nil {
		c.errorf("%s: %v", e.ToolName, err)
	}
}

// finish ends a turn: the answer, unless its deltas were printed, and why
// the run stopped when it did not simply stop.
func (c *chatSession) finish(final *agentfleet.AssistantMessage, streamed bool) error {
	if text := agentfleet.JoinText(final.Content); text != "" && !streamed {
		c.newline()
		fmt.Fprint(c.m.Stdout, text)
		c.midLine = true
	}
	c.newline()
	if final.StopReason != "" && final.StopReason != agentfleet.StopReasonStop {
		line := "[" + string(final.StopReason)
		if final.ErrorMessage != "" {
			line += ": " + final.ErrorMessage
		}
		fmt.Fprintln(c.m.Stderr, line+"]")
	}
	return nil
}

func (c *chatSession) newline() {
	if c.midLine {
		fmt.Fprintln(c.m.Stdout)
		c.midLine = false
	}
}

func (c *chatSession) errorf(format string, args ...any) {
	c.newline()
	fmt.Fprintf(c.m.Stderr, format+"\n", args...)
}
