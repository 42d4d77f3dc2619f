package loop_test

import (
	"context"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
	"github.com/agentfleet/agentfleet/internal/pipeline"
	"github.com/agentfleet/agentfleet/internal/tools"
)

// TestTemplateSessionsKeepTheirOwn builds two sessions from one template:
// each run carries its own session's name, goes to its own sink and store,
// and its calls pass its own before hook; the template's system prompt and
// tools are every session's.
func TestTemplateSessionsKeepTheirOwn(t *testing.T) {
	store, err := tools.NewAgentStore("test", tool("get", false, text("value")))
	if err != nil {
		t.Fatal(err)
	}
	m := &script{steps: []step{use(`get {}`), say("a"), use(`get {}`), say("b")}}
	tmpl := loop.NewTemplate(loop.Config{Agent: "test", Model: m, Tools: store, SystemPrompt: "shared",
		Session: "ignored", Pipeline: pipeline.Config{Before: func(context.Context, *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
			t.Error("the template's before hook ran for a session that has its own")
			return nil, nil
		}}})
	var stored [2]int
	var hooked [2]int
	var evs [2]*events
	sessions := make([]*loop.Session, 2)
	for i, name := range []string{"one", "two"} {
		evs[i] = &events{}
		sessions[i] = tmpl.New(loop.Own{
			Session: name, Sink: loop.Events(evs[i]),
			Store: storeFuncs{append: func(string, agentfleet.Message) error { stored[i]++; return nil }},
			Before: func(context.Context, *pipeline.BeforeContext) (*pipeline.BeforeResult, error) {
				hooked[i]++
				return nil, nil
			},
		})
	}
	for i, s := range sessions {
		wait(t, s.Send(agentfleet.NewUserMessage("hi")))
		if got, want := roles(s.History()), "user:hi assistant tool:get assistant"; got != want {
			t.Errorf("history of session %d = %s, want %s", i, got, want)
		}
	}
	for i, name := range []string{"one", "two"} {
		if stored[i] != 4 || hooked[i] != 1 {
			t.Errorf("session %s: %d messages stored, before hook ran %d times; want 4 and 1", name, stored[i], hooked[i])
		}
		for _, e := range evs[i].list() {
			if e.Session != name {
				t.Errorf("session %s emitted an event of session %q", name, e.Session)
				break
			}
		}
	}
	for i := range 4 {
		if r := m.request(i); r.SystemPrompt != "shared" || r.Session != []string{"one", "one", "two", "two"}[i] {
			t.Errorf("request %d: system prompt %q, session %q", i, r.SystemPrompt, r.Session)
		}
	}
}

// TestIdleSessionIsCompacted checks the compact form of an idle session:
// after each run it holds no spare capacity in its history and no queue,
// and the next run still sees the whole history, in order.
func TestIdleSessionIsCompacted(t *testing.T) {
	m := &script{steps: []step{use(`get {}`), say("a"), say("b")}}
	s, _ := newSession(t, m, loop.Config{}, tool("get", false, text("value")))
	if !s.Compacted() {
		t.Error("a new session is not compacted")
	}
	wait(t, s.Send(agentfleet.NewUserMessage("one")))
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.Compacted() {
		t.Error("a session idle after a run is not compacted")
	}
	wait(t, s.Send(agentfleet.NewUserMessage("two")))
	if err := s.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.Compacted() {
		t.Error("a session idle after its second run is not compacted")
	}
	if got, want := roles(m.request(2).Messages), "user:one assistant tool:get assistant user:two"; got != want {
		t.Errorf("the second run saw %s, want %s", got, want)
	}
}
