package builtin

import (
	"context"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
)

var getTimeSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"timezone": {
			"type": "string",
			"description": "IANA time zone name, e.g. \"Europe/Paris\", \"America/New_York\", \"Asia/Tokyo\" or \"UTC\"",
			"minLength": 1
		}
	},
	"required": ["timezone"],
	"additionalProperties": false
}`)

// GetTime returns the get_time tool, which tells the current time in an IANA
// time zone given as {"timezone": string}. The result text is the time in
// RFC 3339 followed by the zone, e.g. "2026-11-30T20:15:00+09:00
// (Asia/Tokyo)"; the details hold {"timezone": name, "unix": seconds}.
//
// now is the clock; nil means time.Now. An unknown zone fails with
// `get_time: unknown time zone "Mars/Base"`. "Local" is refused too, since it
// would name whatever zone the worker's machine is set to. Zones are looked up
// in the system's time zone database (or one embedded by the program that
// imports time/tzdata).
func GetTime(now func() time.Time) *agentfleet.Tool {
	if now == nil {
		now = time.Now
	}
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        "get_time",
			Label:       "Current time",
			Description: "Returns the current date and time in the given IANA time zone (such as \"Europe/Berlin\" or \"UTC\"), in RFC 3339 format.",
			InputSchema: getTimeSchema,
			Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
			Parallel:    true,
		},
		Handler: agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("get_time: %w", err)
			}
			name, _, err := stringArg("get_time", call.Arguments, "timezone", true)
			if err != nil {
				return nil, err
			}
			if name == "" {
				return nil, fmt.Errorf("get_time: argument %q is empty; give an IANA time zone name such as \"UTC\"", "timezone")
			}
			if name == "Local" {
				return nil, fmt.Errorf("get_time: unknown time zone %q", name)
			}
			loc, err := time.LoadLocation(name)
			if err != nil {
				return nil, fmt.Errorf("get_time: unknown time zone %q", name)
			}
			t := now().In(loc)
			res := agentfleet.TextResult(fmt.Sprintf("%s (%s)", t.Format(time.RFC3339), name))
			res.Details = map[string]any{"timezone": name, "unix": t.Unix()}
			return res, nil
		}),
	}
}
