package llm

import (
	"regexp"
	"strings"
)

// transferRe finds a request to hand the conversation over: "transfer to
// <agent>", with an optional reason after a colon, the agent one token of
// letters, digits, '-' and '_'.
var transferRe = regexp.MustCompile(`(?i)\btransfer\s+(?:me\s+)?to\s+([A-Za-z0-9_-]+)(?:\s*:\s*([^\n]*))?`)

// offlineTransfer returns the call of a transfer tool that text requests,
// "transfer to billing: a refund" calling transfer_to_billing {"reason":
// "a refund"}, and the text before it, where other requests are looked
// for; ok is false when there is none.
func offlineTransfer(text string) (before string, call offlineCall, ok bool) {
	loc := transferRe.FindStringSubmatchIndex(text)
	if loc == nil {
		return text, offlineCall{}, false
	}
	args := map[string]any{}
	if loc[4] >= 0 {
		if r := strings.TrimSpace(text[loc[4]:loc[5]]); r != "" {
			args["reason"] = r
		}
	}
	return text[:loc[0]], offlineCall{pos: loc[0], tool: "transfer_to_" + text[loc[2]:loc[3]], args: args}, true
}
