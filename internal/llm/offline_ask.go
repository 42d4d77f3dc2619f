package llm

import (
	"regexp"
	"strings"
)

// askRe finds a request to delegate: "ask <agent>: <message>", the agent
// one token of letters, digits, '-' and '_'.
var askRe = regexp.MustCompile(`(?i)\bask\s+([A-Za-z0-9_-]+)\s*:\s*`)

// offlineAsks returns the calls of ask tools that text requests, "ask
// researcher: find X" calling ask_researcher {"message": "find X"}, each
// message running to the next such request or to the end, and the text
// before the first, where other requests are looked for. Several requests
// make one batch, whose calls run at once.
func offlineAsks(text string) (before string, calls []offlineCall) {
	locs := askRe.FindAllStringSubmatchIndex(text, -1)
	if locs == nil {
		return text, nil
	}
	for i, loc := range locs {
		end := len(text)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		msg := strings.TrimSpace(text[loc[1]:end])
		msg = strings.TrimSpace(strings.TrimRight(strings.TrimSuffix(msg, " and"), " ;,"))
		if msg == "" {
			continue
		}
		calls = append(calls, offlineCall{pos: loc[0], tool: "ask_" + text[loc[2]:loc[3]], args: map[string]any{"message": msg}})
	}
	return text[:locs[0][0]], calls
}
