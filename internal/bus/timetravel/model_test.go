package timetravel_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
)

// TestServeModel forks with a model the orchestrator allows: the forked
// record names it. A model it does not allow, a model name with white
// space or too long, and any model asked of a server that lets no fork
// choose one are refused with what is wrong, and fork nothing.
func TestServeModel(t *testing.T) {
	st, nc := open(t)
	ctx := context.Background()
	seed(t, st, "src")
	subjects, _ := bus.NewSubjects("")
	allow := func(agent, model string) error {
		if agent == "default" && model == "b" {
			return nil
		}
		return errors.New("agent " + agent + " may not be forked onto model " + model)
	}
	with, err := timetravel.Serve(ctx, nc, timetravel.Config{Subjects: subjects, Store: st, Model: allow})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(data string) timetravel.Reply {
		t.Helper()
		m, err := nc.Request(timetravel.Subject(subjects, "default", "src"), []byte(data), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var rep timetravel.Reply
		if err := json.Unmarshal(m.Data, &rep); err != nil {
			t.Fatalf("reply %q: %v", m.Data, err)
		}
		return rep
	}
	rep := ask(`{"new_session":"m1","before_run":"r2","model":"b"}`)
	if rep.Error != "" || rep.Forked == nil || rep.Forked.Model != "b" {
		t.Fatalf("fork reply %+v", rep)
	}
	l, err := st.Load(ctx, "default", "m1")
	if err != nil {
		t.Fatal(err)
	}
	last := l.Records[len(l.Records)-1]
	if last.Forked == nil || last.Forked.Model != "b" || last.Forked.BeforeRun != "r2" {
		t.Fatalf("the fork's last record is %+v, want a forked record naming model b", last)
	}
	for _, tc := range []struct{ name, data, err string }{
		{"not allowed", `{"new_session":"m2","model":"zzz"}`, "may not be forked onto model zzz"},
		{"white space", `{"new_session":"m3","model":"a b"}`, "white space"},
		{"control", `{"new_session":"m4","model":"a\u0000"}`, "control character"},
		{"too long", `{"new_session":"m5","model":"` + strings.Repeat("m", 300) + `"}`, "limit is 256"},
		{"not a string", `{"new_session":"m6","model":7}`, "not JSON"},
	} {
		if rep := ask(tc.data); rep.Forked != nil || !strings.Contains(rep.Error, tc.err) {
			t.Errorf("%s: reply %+v, want an error with %q", tc.name, rep, tc.err)
		}
	}
	with.Close()

	without, err := timetravel.Serve(ctx, nc, timetravel.Config{Subjects: subjects, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	defer without.Close()
	if rep := ask(`{"new_session":"m7","model":"b"}`); rep.Forked != nil || !strings.Contains(rep.Error, "lets no fork choose its model") {
		t.Errorf("a server without a model check: reply %+v", rep)
	}
	for _, s := range []string{"m2", "m3", "m4", "m5", "m6", "m7"} {
		if l, err := st.Load(ctx, "default", s); err != nil || l.LastSeq != 0 {
			t.Errorf("a refused request forked %s: %+v, %v", s, l, err)
		}
	}
}
