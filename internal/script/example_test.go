package script_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/script"
)

func ExampleNew() {
	def := &script.Definition{
		Name:        "searchWine",
		Label:       "Wine Search",
		Description: "Search a wine database",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Code: `
WINES = ["cabernet franc", "cabernet sauvignon", "merlot"]

def execute(args):
    found = [w for w in WINES if args["query"] in w]
    progress({"searched": len(WINES)})
    return {
        "content": "Found %d %s wines" % (len(found), args["query"]),
        "details": {"wines": found},
    }
`,
	}
	if err := script.DryRun(context.Background(), def, script.Env{}); err != nil {
		fmt.Println(err)
		return
	}
	tool, err := script.New(def, script.Env{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := tool.Handler.Call(context.Background(), &agentfleet.Call{
		ID: "call_1", Name: def.Name, Arguments: map[string]any{"query": "cabernet"},
		Progress: func(p any) { fmt.Println("progress:", p) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(agentfleet.JoinText(res.Content))
	fmt.Println(res.Details["wines"])
	// Output:
	// progress: map[searched:3]
	// Found 2 cabernet wines
	// [cabernet franc cabernet sauvignon]
}

func ExampleCheck() {
	err := script.Check(&script.Definition{
		Name:        "broken",
		Description: "has a typo",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Code:        "def execute(args):\n    return reslt\n",
	})
	fmt.Println(err)
	// Output:
	// tool broken: code:2:12: undefined: reslt
}
