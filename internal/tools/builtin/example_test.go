package builtin_test

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/tools/builtin"
)

func ExampleCalculator() {
	calc := builtin.Calculator()
	for _, expr := range []string{"2 + 3 * 4 ^ 2", "-2 ^ 2", "1 / 4", "(1 + 2))"} {
		res, err := calc.Handler.Call(context.Background(), &agentfleet.Call{
			Name:      calc.Name,
			Arguments: map[string]any{"expression": expr},
			Progress:  func(any) {},
		})
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(agentfleet.JoinText(res.Content))
	}
	// Output:
	// 50
	// -4
	// 0.25
	// calculator: unexpected ")" at column 8
}
