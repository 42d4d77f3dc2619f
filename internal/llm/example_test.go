package llm_test

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/llm"
	"github.com/agentfleet/agentfleet/internal/loop"
)

func ExampleOffline() {
	req := &loop.Request{
		Messages: []agentfleet.Message{agentfleet.NewUserMessage("What time is it in Tokyo, and what is 2*(3+4)?")},
		Tools:    []agentfleet.ToolDef{{Name: "get_time"}, {Name: "calculator"}},
	}
	m, err := llm.Offline{}.Complete(context.Background(), req, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.StopReason)
	for _, c := range m.ToolCalls() {
		fmt.Println(c.ID, c.Name, string(c.Arguments))
	}
	// Output:
	// tool_use
	// call_1 get_time "{\"timezone\":\"Asia/Tokyo\"}"
	// call_2 calculator "{\"expression\":\"2*(3+4)\"}"
}
