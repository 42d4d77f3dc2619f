package llm

import (
	"strings"
)

// DefaultContextWindow is the context window, in tokens, of a model
// ContextWindow does not know: small enough for most local models.
const DefaultContextWindow = 16384

// contextWindows are the context windows of known models, by name prefix;
// the longest prefix that matches wins.
var contextWindows = map[string]int{
	"gpt-5":         400000,
	"gpt-4.1":       1047576,
	"gpt-4o":        128000,
	"gpt-4-turbo":   128000,
	"gpt-4":         8192,
	"gpt-3.5-turbo": 16385,
	"o1":            200000,
	"o3":            200000,
	"o4-mini":       200000,
	"claude":        200000,
	"gemini":        1048576,
	"llama3.1":      131072,
	"llama3.2":      131072,
	"llama3.3":      131072,
	"llama-3.1":     131072,
	"llama-3.3":     131072,
	"qwen2.5":       32768,
	"qwen3":         40960,
	"mistral":       32768,
	"deepseek":      65536,
}

// ContextWindow returns the context window of model, in tokens, from a
// small table of known models (matched by name prefix, with any
// "provider/" prefix of gateways left out), else DefaultContextWindow.
func ContextWindow(model string) int {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	best, n := "", DefaultContextWindow
	for p, w := range contextWindows {
		if strings.HasPrefix(m, p) && len(p) > len(best) {
			best, n = p, w
		}
	}
	return n
}
