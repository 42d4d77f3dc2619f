package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tools"
)

func def(name, label, desc string) *agentfleet.Tool {
	return &agentfleet.Tool{ToolDef: agentfleet.ToolDef{Name: name, Label: label, Description: desc}}
}

func names(ts []*agentfleet.Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

func TestStore(t *testing.T) {
	s := tools.NewStore("a")
	s.MustRegister(def("get_weather", "Weather Lookup", "Fetch weather"), def("get_time", "Time Lookup", "Get time"), def("echo", "", "Echo"))
	if got, want := names(s.List()), "get_weather,get_time,echo"; got != want {
		t.Errorf("order = %s, want %s", got, want)
	}
	if _, ok := s.Get("get_time"); !ok {
		t.Error("get_time not found")
	}
	if _, ok := s.Get("nope"); ok {
		t.Error("nope found")
	}
	err := s.Register(def("get_time", "again", "dup"))
	if err == nil || !strings.Contains(err.Error(), `tool "get_time" is already registered`) {
		t.Errorf("duplicate register error = %v", err)
	}
	if !s.Remove("get_weather") || s.Remove("get_weather") {
		t.Error("remove did not report presence correctly")
	}
	if got, want := names(s.List()), "get_time,echo"; got != want {
		t.Errorf("after remove = %s, want %s", got, want)
	}
	s.Clear()
	if s.Len() != 0 {
		t.Errorf("len after clear = %d", s.Len())
	}
}

func TestStoresAreIsolated(t *testing.T) {
	a, b := tools.NewStore("A"), tools.NewStore("B")
	a.MustRegister(def("get_time", "", ""))
	b.MustRegister(def("get_weather", "", ""))
	if _, ok := a.Get("get_weather"); ok {
		t.Error("A sees B's tool")
	}
	a.Clear()
	if b.Len() != 1 {
		t.Error("clearing A changed B")
	}
}

func TestRegisterRejectsBadSchema(t *testing.T) {
	s := tools.NewStore("a")
	for _, schema := range []string{`{"type":`, `[1]`, `{"type":"no-such-type"}`} {
		tool := def("bad", "", "")
		tool.InputSchema = []byte(schema)
		if err := s.Register(tool); err == nil || !strings.Contains(err.Error(), `tool "bad"`) {
			t.Errorf("schema %s: error = %v, want one naming the tool", schema, err)
		}
	}
}

func TestListTools(t *testing.T) {
	s, err := tools.NewAgentStore("a", def("get_weather", "Weather Lookup", "Fetch current weather"), def("echo", "", "Echo text"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := tools.NewAgentStore("b", def("secret", "Secret", "B only"))
	lt, _ := s.Get(tools.ListToolsName)
	res, err := lt.Handler.Call(context.Background(), &agentfleet.Call{ID: "call-1", Progress: func(any) {}})
	if err != nil {
		t.Fatal(err)
	}
	want := "Available tools:\n- get_weather: Weather Lookup — Fetch current weather\n- echo: echo — Echo text\n- list_tools: List Tools — " + lt.Description
	if got := agentfleet.JoinText(res.Content); got != want {
		t.Errorf("list_tools =\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(agentfleet.JoinText(res.Content), "secret") || other.Len() != 2 {
		t.Error("list_tools leaks another store's tools")
	}
	// A tool registered later shows up: the tool is bound to the store.
	s.MustRegister(def("late", "Late", "Added later"))
	res, _ = lt.Handler.Call(context.Background(), &agentfleet.Call{})
	if !strings.HasSuffix(agentfleet.JoinText(res.Content), "- late: Late — Added later") {
		t.Errorf("list_tools does not list the late tool: %s", agentfleet.JoinText(res.Content))
	}
}

func TestFilter(t *testing.T) {
	s := tools.NewStore("a")
	s.MustRegister(def("a1", "", ""), def("b1", "", ""), def("a2", "", ""))
	f := s.Filter("a-only", func(t *agentfleet.Tool) bool { return strings.HasPrefix(t.Name, "a") })
	if got, want := names(f.List()), "a1,a2"; got != want {
		t.Errorf("filtered = %s, want %s", got, want)
	}
	if err := f.ValidateArguments("a1", map[string]any{}); err != nil {
		t.Errorf("validate in filtered store: %v", err)
	}
}
