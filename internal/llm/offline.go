package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/loop"
)

// OfflineName is the Model and API of the messages of Offline; their
// Provider is OfflineProvider.
const (
	OfflineName     = "offline"
	OfflineProvider = "agentfleet"
)

// Offline is a model that needs no network and no key: a deterministic
// stand-in for demos and tests that understands a few requests and
// answers them with the built-in tools.
//
// It reads the text of the last user message and calls, in one batch and
// in the order the requests appear in it:
//
//   - get_time {"timezone": zone} for a time question ("what time is it in
//     Paris?", "time in Tokyo", "time in UTC"), zone being the IANA zone of a
//     known city, or UTC for an unknown city or none;
//   - calculator {"expression": expr} for arithmetic: a run of numbers,
//     parentheses and the operators + - * / % ^ holding at least one
//     operator, as in "what is 2*(3+4)?";
//   - sleep {"ms": n} for "sleep N" (milliseconds), "sleep 2s", "sleep 2
//     seconds" or "sleep 1 minute";
//   - list_tools {} for "list tools" or "what tools ...";
//   - echo {"text": text} for "echo <text>", text being the rest of the
//     message, where no other request is looked for;
//   - ask_<agent> {"message": text} for "ask <agent>: <text>", text running
//     to the next such request or the end (offline_ask.go);
//   - transfer_to_<agent> {"reason": text} for "transfer to <agent>" or
//     "transfer me to <agent>", the reason after a colon, optional
//     (offline_transfer.go).
//
// A request to write a tool ("make a tool that doubles numbers", "write a
// tool that adds two numbers", "create a tool that reverses text") is
// answered on its own: write_tool with a Starlark definition, then, once
// the fleet serves the new tool, a call of it on an example (the numbers
// or quoted text of the request, or a default), then an answer with its
// result (offline_tools.go).
//
// It calls only tools that the request offers, and says in its text which
// ones it would have needed but lacks. When the conversation ends with tool
// results, it answers with them ("get_time: ...; calculator: 14") and
// stops. Anything else gets a plain answer that says this is the offline
// model and how to configure a real one.
//
// Text goes to onDelta word by word. Tool call ids are "call_<n>", n
// counting the calls of the conversation from 1, and their arguments are
// JSON strings, as a real model's are. Usage counts words, roughly.
type Offline struct{}

var _ loop.Model = Offline{}

// offlineHelp is the answer to a message that Offline does not understand.
const offlineHelp = "This is the offline model of agentfleet: it answers without a language model, " +
	"so it understands only a few requests: the time in a city, arithmetic such as 2*(3+4), " +
	"\"sleep 2s\", \"echo <text>\", \"list tools\" and \"make a tool that doubles numbers\". " +
	"To talk to a real model, set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible server)."

// Complete implements loop.Model. It fails only when ctx is done or req is
// nil.
func (Offline) Complete(ctx context.Context, req *loop.Request, onDelta loop.DeltaFunc) (*agentfleet.AssistantMessage, error) {
	if req == nil {
		return nil, errors.New("llm: offline: request is nil")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: offline: %w", err)
	}
	m := &agentfleet.AssistantMessage{
		Role:       agentfleet.RoleAssistant,
		Content:    []agentfleet.Content{},
		API:        OfflineName,
		Provider:   OfflineProvider,
		Model:      OfflineName,
		StopReason: agentfleet.StopReasonStop,
	}

	var text string
	var calls []offlineCall
	user := lastUserText(req.Messages)
	if results := lastToolResults(req.Messages); len(results) > 0 {
		var ok bool
		if text, calls, ok = followToolRequest(user, results, req.Tools, wroteTool(req.Messages)); !ok {
			text = summarizeResults(results)
		}
	} else if r, ok := offlineToolRequest(user); ok {
		text, calls = planToolRequest(user, r, req.Tools)
	} else if c, ok := offlineUse(user, req.Tools); ok {
		calls = []offlineCall{c}
	} else {
		text, calls = planOffline(user, req.Tools)
	}

	if text != "" {
		for _, piece := range strings.SplitAfter(text, " ") {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("llm: offline: %w", err)
			}
			if onDelta != nil && piece != "" {
				onDelta(piece)
			}
		}
		m.Content = append(m.Content, agentfleet.Text(text))
	}
	n := countToolCalls(req.Messages)
	for _, c := range calls {
		n++
		obj, err := json.Marshal(c.args)
		if err != nil {
			return nil, fmt.Errorf("llm: offline: arguments of %s: %w", c.tool, err)
		}
		args, _ := json.Marshal(string(obj))
		m.Content = append(m.Content, agentfleet.Content{
			Type:      agentfleet.ContentToolCall,
			ID:        "call_" + strconv.Itoa(n),
			Name:      c.tool,
			Arguments: args,
		})
	}
	if len(calls) > 0 {
		m.StopReason = agentfleet.StopReasonToolUse
	}
	in := countWords(req.SystemPrompt)
	for _, msg := range req.Messages {
		in += countWords(messageText(msg))
	}
	out := countWords(text) + 3*len(calls)
	m.Usage = &agentfleet.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
	m.Timestamp = time.Now().UTC()
	return m, nil
}

// offlineCall is a tool call that Offline plans.
type offlineCall struct {
	pos  int
	tool string
	args map[string]any
}

var (
	echoRe      = regexp.MustCompile(`(?is)\becho\s+(.+)`)
	timeRe      = regexp.MustCompile(`(?i)\btime\b`)
	exprRe      = regexp.MustCompile(`-?(?:\(|\.?\d)[\d.+\-*/%^()\s]*[\d)]`)
	operatorRe  = regexp.MustCompile(`.[+\-*/%^]`)
	sleepRe     = regexp.MustCompile(`(?i)\bsleep\s+(\d+(?:\.\d+)?)\s*(ms|milliseconds?|millis|s|secs?|seconds?|m|mins?|minutes?)?\b`)
	listToolsRe = regexp.MustCompile(`(?i)\blist\s+(?:(?:all|the|your|available)\s+)*tools\b|\b(?:what|which)\s+tools\b|\blist_tools\b`)
)

// offlineZones maps the city names that get_time questions may hold to
// their IANA time zones.
var offlineZones = []struct {
	name string
	zone string
	re   *regexp.Regexp
}{
	{name: "tokyo", zone: "Asia/Tokyo"},
	{name: "paris", zone: "Europe/Paris"},
	{name: "london", zone: "Europe/London"},
	{name: "new york", zone: "America/New_York"},
	{name: "nyc", zone: "America/New_York"},
	{name: "berlin", zone: "Europe/Berlin"},
	{name: "madrid", zone: "Europe/Madrid"},
	{name: "rome", zone: "Europe/Rome"},
	{name: "amsterdam", zone: "Europe/Amsterdam"},
	{name: "moscow", zone: "Europe/Moscow"},
	{name: "istanbul", zone: "Europe/Istanbul"},
	{name: "cairo", zone: "Africa/Cairo"},
	{name: "johannesburg", zone: "Africa/Johannesburg"},
	{name: "dubai", zone: "Asia/Dubai"},
	{name: "mumbai", zone: "Asia/Kolkata"},
	{name: "delhi", zone: "Asia/Kolkata"},
	{name: "bangkok", zone: "Asia/Bangkok"},
	{name: "singapore", zone: "Asia/Singapore"},
	{name: "hong kong", zone: "Asia/Hong_Kong"},
	{name: "shanghai", zone: "Asia/Shanghai"},
	{name: "beijing", zone: "Asia/Shanghai"},
	{name: "seoul", zone: "Asia/Seoul"},
	{name: "sydney", zone: "Australia/Sydney"},
	{name: "auckland", zone: "Pacific/Auckland"},
	{name: "san francisco", zone: "America/Los_Angeles"},
	{name: "los angeles", zone: "America/Los_Angeles"},
	{name: "chicago", zone: "America/Chicago"},
	{name: "toronto", zone: "America/Toronto"},
	{name: "mexico city", zone: "America/Mexico_City"},
	{name: "sao paulo", zone: "America/Sao_Paulo"},
	{name: "utc", zone: "UTC"},
	{name: "gmt", zone: "UTC"},
}

func init() {
	for i := range offlineZones {
		z := &offlineZones[i]
		z.re = regexp.MustCompile(`(?i)\b` + strings.ReplaceAll(regexp.QuoteMeta(z.name), " ", `\s+`) + `\b`)
	}
}

// planOffline returns the text and the tool calls that answer a user's
// text, given the tools on offer.
func planOffline(text string, defs []agentfleet.ToolDef) (string, []offlineCall) {
	scan, calls := offlineAsks(text)
	if before, c, ok := offlineTransfer(scan); ok {
		scan, calls = before, append(calls, c)
	}
	if loc := echoRe.FindStringSubmatchIndex(scan); loc != nil {
		calls = append(calls, offlineCall{pos: loc[0], tool: "echo", args: map[string]any{"text": strings.TrimSpace(scan[loc[2]:loc[3]])}})
		scan = scan[:loc[0]]
	}
	times := timeRe.FindAllStringIndex(scan, -1)
	for i, loc := range times {
		end := len(scan)
		if i+1 < len(times) {
			end = times[i+1][0]
		}
		calls = append(calls, offlineCall{pos: loc[0], tool: "get_time", args: map[string]any{"timezone": zoneIn(scan[loc[0]:end])}})
	}
	for _, loc := range exprRe.FindAllStringIndex(scan, -1) {
		if expr := balance(strings.TrimSpace(scan[loc[0]:loc[1]])); operatorRe.MatchString(expr) {
			calls = append(calls, offlineCall{pos: loc[0], tool: "calculator", args: map[string]any{"expression": expr}})
		}
	}
	for _, m := range sleepRe.FindAllStringSubmatchIndex(scan, -1) {
		n, _ := strconv.ParseFloat(scan[m[2]:m[3]], 64)
		unit := ""
		if m[4] >= 0 {
			unit = strings.ToLower(scan[m[4]:m[5]])
		}
		switch {
		case unit == "" || strings.HasPrefix(unit, "mil") || unit == "ms":
		case strings.HasPrefix(unit, "s"):
			n *= 1000
		case strings.HasPrefix(unit, "m"):
			n *= 60000
		}
		calls = append(calls, offlineCall{pos: m[0], tool: "sleep", args: map[string]any{"ms": int64(n)}})
	}
	for _, loc := range listToolsRe.FindAllStringIndex(scan, -1) {
		calls = append(calls, offlineCall{pos: loc[0], tool: "list_tools", args: map[string]any{}})
	}
	if len(calls) == 0 {
		return offlineHelp, nil
	}
	slices.SortStableFunc(calls, func(a, b offlineCall) int { return a.pos - b.pos })

	have := make(map[string]bool, len(defs))
	names := make([]string, 0, len(defs))
	for _, d := range defs {
		have[d.Name] = true
		names = append(names, d.Name)
	}
	var ok []offlineCall
	var missing []string
	for _, c := range calls {
		if have[c.tool] {
			ok = append(ok, c)
		} else if !slices.Contains(missing, c.tool) {
			missing = append(missing, c.tool)
		}
	}
	if len(missing) == 0 {
		return "", ok
	}
	available := "I have no tools"
	if len(names) > 0 {
		available = "the tools I have are " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("I would need the tool %s for this, but it is not available to me (%s).",
		strings.Join(missing, ", "), available), ok
}

// zoneIn returns the time zone of the first known city named in s, UTC
// when there is none.
func zoneIn(s string) string {
	zone, at := "UTC", len(s)+1
	for _, z := range offlineZones {
		if loc := z.re.FindStringIndex(s); loc != nil && loc[0] < at {
			zone, at = z.zone, loc[0]
		}
	}
	return zone
}

// balance trims the parentheses that an expression cut out of a sentence
// leaves unmatched at its ends, as in "(say 2+2)".
func balance(expr string) string {
	for {
		open, closing := strings.Count(expr, "("), strings.Count(expr, ")")
		switch {
		case closing > open && strings.HasSuffix(expr, ")"):
			expr = strings.TrimSpace(expr[:len(expr)-1])
		case open > closing && strings.HasPrefix(expr, "("):
			expr = strings.TrimSpace(expr[1:])
		default:
			return expr
		}
	}
}

// lastToolResults returns the tool results at the end of msgs, in order.
func lastToolResults(msgs []agentfleet.Message) []*agentfleet.ToolResultMessage {
	i := len(msgs)
	for i > 0 {
		if _, ok := msgs[i-1].(*agentfleet.ToolResultMessage); !ok {
			break
		}
		i--
	}
	results := make([]*agentfleet.ToolResultMessage, 0, len(msgs)-i)
	for _, m := range msgs[i:] {
		results = append(results, m.(*agentfleet.ToolResultMessage))
	}
	return results
}

// summarizeResults returns the answer built from tool results.
func summarizeResults(results []*agentfleet.ToolResultMessage) string {
	parts := make([]string, 0, len(results))
	for _, r := range results {
		text := strings.TrimSpace(resultText(r.Content))
		if text == "" {
			text = "(no output)"
		}
		name := r.ToolName
		if name == "" {
			name = r.ToolCallID
		}
		if r.IsError {
			parts = append(parts, name+" failed: "+text)
		} else {
			parts = append(parts, name+": "+text)
		}
	}
	return strings.Join(parts, "; ")
}

// resultText returns the text of result content, images named.
func resultText(content []agentfleet.Content) string {
	var parts []string
	for _, c := range content {
		switch c.Type {
		case agentfleet.ContentText:
			parts = append(parts, c.Text)
		case agentfleet.ContentImage:
			parts = append(parts, "(an image, "+c.MIMEType+")")
		}
	}
	return strings.Join(parts, "\n")
}

// lastUserText returns the text of the last user message, "" when none.
func lastUserText(msgs []agentfleet.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if u, ok := msgs[i].(*agentfleet.UserMessage); ok {
			return agentfleet.JoinText(u.Content)
		}
	}
	return ""
}

// countToolCalls returns the number of tool calls in the assistant
// messages of msgs.
func countToolCalls(msgs []agentfleet.Message) int {
	n := 0
	for _, m := range msgs {
		a, ok := m.(*agentfleet.AssistantMessage)
		if !ok {
			continue
		}
		for _, c := range a.Content {
			switch c.Type {
			case agentfleet.ContentToolCall:
				n++
			case agentfleet.ContentToolCalls:
				n += len(c.ToolCalls)
			}
		}
	}
	return n
}

func messageText(m agentfleet.Message) string {
	switch m := m.(type) {
	case *agentfleet.UserMessage:
		return agentfleet.JoinText(m.Content)
	case *agentfleet.AssistantMessage:
		return agentfleet.JoinText(m.Content)
	case *agentfleet.ToolResultMessage:
		return agentfleet.JoinText(m.Content)
	}
	return ""
}

func countWords(s string) int { return len(strings.Fields(s)) }
