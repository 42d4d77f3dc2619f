package model

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
)

// Tool names the model asks for.
const (
	ToolEcho   = "echo"
	ToolSleep  = "sleep"
	ToolLedger = "ledger"
)

// hash64 is the harness's deterministic hash of a string.
func hash64(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// SleepMS is the duration the model asks the sleep tool for, for msgid.
func SleepMS(msgid string) int { return 10 + int(hash64("sleep", msgid)%391) }

// UsesLedger says whether the model calls ledger for msgid.
func UsesLedger(msgid string) bool { return hash64("ledger", msgid)%3 == 0 }

// modelLatency is the model's simulated thinking time for a request.
func modelLatency(body []byte) time.Duration {
	return time.Duration(5+hash64(string(body))%60) * time.Millisecond
}

// PlannedCall is a tool call the model asks for.
type PlannedCall struct {
	ID, Name, Args string
}

// PlannedCalls returns the calls the model asks for in the first turn of
// the run of msgid.
func PlannedCalls(msgid string) []PlannedCall {
	arg := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	calls := []PlannedCall{
		{Name: ToolEcho, Args: arg(map[string]string{"text": msgid})},
		{Name: ToolSleep, Args: arg(map[string]int{"ms": SleepMS(msgid)})},
	}
	if UsesLedger(msgid) {
		calls = append(calls, PlannedCall{Name: ToolLedger, Args: arg(map[string]string{"arg": msgid})})
	}
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%s_%d", msgid, i)
	}
	return calls
}

// AnswerText is the final text of the run of msgid whose tool results read
// results, in order.
func AnswerText(msgid string, results []string) string {
	return "answer " + msgid + ": " + strings.Join(results, " | ")
}

// wire types of the chat completions API, as much as the model needs.
type (
	chatRequest struct {
		Model    string        `json:"model"`
		Stream   bool          `json:"stream"`
		Messages []chatMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools,omitempty"`
	}
	chatMessage struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content,omitempty"`
		ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
		ToolCallID string          `json:"tool_call_id,omitempty"`
	}
	wireToolCall struct {
		Index    *int   `json:"index,omitempty"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
)

// text returns the text of a message's content: a string, or text parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type, Text string
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// respond computes the model's answer to a request: its text and tool calls.
func respond(req *chatRequest) (text string, calls []PlannedCall) {
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return "no task", nil
	}
	msgid, ok := strings.CutPrefix(strings.TrimSpace(req.Messages[last].text()), "task ")
	if !ok {
		return "not a task: " + req.Messages[last].text(), nil
	}
	var results []string
	called := false
	for _, m := range req.Messages[last+1:] {
		switch m.Role {
		case "assistant":
			called = called || len(m.ToolCalls) > 0
		case "tool":
			results = append(results, m.text())
		}
	}
	if !called {
		calls := PlannedCalls(msgid)
		if offers(req, ToolAsk) && Delegates(msgid) {
			calls = append(calls, askCall(msgid, len(calls)))
		}
		return "", calls
	}
	return AnswerText(msgid, results), nil
}
