package loop

import (
	"encoding/json"
	"time"

	"github.com/agentfleet/agentfleet"
)

// The packed form of a message is JSON with short keys and nothing that the
// frame around it says already (packed.go): no role (the frame's kind), no
// run id on an assistant message of the frame's run, and a UTC timestamp as
// Unix nanoseconds. Values decode as they would from the history store's
// JSON (numbers in Details as float64, a zone by its offset alone, say).
// Every field of the message
// types is here: TestPackedMessagesRoundTrip fails for one that is not.

type packedContent struct {
	Type      string                   `json:"y,omitempty"`
	Text      string                   `json:"x,omitempty"`
	Data      string                   `json:"d,omitempty"`
	MIMEType  string                   `json:"m,omitempty"`
	ID        string                   `json:"i,omitempty"`
	Name      string                   `json:"n,omitempty"`
	Arguments json.RawMessage          `json:"a,omitempty"`
	ToolCalls []agentfleet.RawToolCall `json:"c,omitempty"`
}

// packedTime is a timestamp: Unix nanoseconds when it is in UTC, else
// (a client's time with its zone) the time itself; neither when zero.
type packedTime struct {
	Nanos int64      `json:"t,omitempty"`
	Time  *time.Time `json:"tz,omitempty"`
}

type packedUser struct {
	Content []packedContent `json:"c"`
	ID      string          `json:"i,omitempty"`
	Role    string          `json:"r,omitempty"` // only when not RoleUser
	packedTime
}

type packedAssistant struct {
	Content      []packedContent       `json:"c"`
	API          string                `json:"a,omitempty"`
	Provider     string                `json:"p,omitempty"`
	Model        string                `json:"m,omitempty"`
	Usage        *agentfleet.Usage     `json:"u,omitempty"`
	StopReason   agentfleet.StopReason `json:"s,omitempty"`
	ErrorMessage string                `json:"e,omitempty"`
	RunID        string                `json:"g,omitempty"` // only when not the frame's run
	Role         string                `json:"r,omitempty"` // only when not RoleAssistant
	packedTime
}

type packedTool struct {
	ToolCallID     string            `json:"i,omitempty"`
	ToolName       string            `json:"n,omitempty"`
	Content        []packedContent   `json:"c"`
	Details        map[string]any    `json:"d,omitempty"`
	Usage          *agentfleet.Usage `json:"u,omitempty"`
	AddedToolNames []string          `json:"k,omitempty"`
	IsError        bool              `json:"e,omitempty"`
	Terminate      bool              `json:"z,omitempty"`
	Role           string            `json:"r,omitempty"` // only when not RoleTool
	packedTime
}

// appendPackedMessage appends the packed form of m, of run runID, to b.
func appendPackedMessage(b []byte, runID string, m agentfleet.Message) ([]byte, error) {
	var v any
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		v = &packedUser{Content: packContents(m.Content), ID: m.ID, Role: unless(m.Role, agentfleet.RoleUser),
			packedTime: packTime(m.Timestamp)}
	case *agentfleet.AssistantMessage:
		v = &packedAssistant{Content: packContents(m.Content), API: m.API, Provider: m.Provider, Model: m.Model,
			Usage: m.Usage, StopReason: m.StopReason, ErrorMessage: m.ErrorMessage, RunID: unless(m.RunID, runID),
			Role: unless(m.Role, agentfleet.RoleAssistant), packedTime: packTime(m.Timestamp)}
	case *agentfleet.ToolResultMessage:
		v = &packedTool{ToolCallID: m.ToolCallID, ToolName: m.ToolName, Content: packContents(m.Content),
			Details: m.Details, Usage: m.Usage, AddedToolNames: m.AddedToolNames, IsError: m.IsError,
			Terminate: m.Terminate, Role: unless(m.Role, agentfleet.RoleTool), packedTime: packTime(m.Timestamp)}
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, data...), nil
}

// unpackMessage decodes the packed form data of a message of kind, of run
// runID.
func unpackMessage(kind byte, runID string, data []byte) (agentfleet.Message, error) {
	switch kind {
	case packUser:
		var p packedUser
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		return &agentfleet.UserMessage{Role: or(p.Role, agentfleet.RoleUser), Content: unpackContents(p.Content), ID: p.ID,
			Timestamp: p.time()}, nil
	case packAssistant:
		var p packedAssistant
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		return &agentfleet.AssistantMessage{Role: or(p.Role, agentfleet.RoleAssistant), Content: unpackContents(p.Content),
			API: p.API, Provider: p.Provider, Model: p.Model, Usage: p.Usage, StopReason: p.StopReason,
			ErrorMessage: p.ErrorMessage, RunID: or(p.RunID, runID), Timestamp: p.time()}, nil
	case packTool:
		var p packedTool
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, err
		}
		return &agentfleet.ToolResultMessage{Role: or(p.Role, agentfleet.RoleTool), ToolCallID: p.ToolCallID,
			ToolName: p.ToolName, Content: unpackContents(p.Content), Details: p.Details, Usage: p.Usage,
			AddedToolNames: p.AddedToolNames, IsError: p.IsError, Terminate: p.Terminate, Timestamp: p.time()}, nil
	}
	return nil, errUnknownKind
}

// unless is s, or "" when s is the usual value; or undoes it. A message
// whose field is empty where the usual value is not keeps "-" for it.
func unless(s, usual string) string {
	switch s {
	case usual:
		return ""
	case "":
		return "-"
	}
	return s
}

func or(s, usual string) string {
	switch s {
	case "":
		return usual
	case "-":
		return ""
	}
	return s
}

func packTime(t time.Time) packedTime {
	switch {
	case t.IsZero():
		return packedTime{}
	case t.Location() == time.UTC && t.UnixNano() != 0 && t.Equal(time.Unix(0, t.UnixNano())):
		return packedTime{Nanos: t.UnixNano()}
	}
	return packedTime{Time: &t}
}

func (p *packedTime) time() time.Time {
	switch {
	case p.Time != nil:
		return *p.Time
	case p.Nanos != 0:
		return time.Unix(0, p.Nanos).UTC()
	}
	return time.Time{}
}

func packContents(cs []agentfleet.Content) []packedContent {
	if cs == nil {
		return nil
	}
	out := make([]packedContent, len(cs))
	for i, c := range cs {
		out[i] = packedContent(c)
	}
	return out
}

func unpackContents(ps []packedContent) []agentfleet.Content {
	if ps == nil {
		return nil
	}
	out := make([]agentfleet.Content, len(ps))
	for i, p := range ps {
		out[i] = agentfleet.Content(p)
	}
	return out
}
