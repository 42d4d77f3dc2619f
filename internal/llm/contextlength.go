package llm

import (
	"errors"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// contextLengthPhrases are what the common servers say, in lower case, when
// a request is longer than the model's context window: OpenAI and Azure
// ("This model's maximum context length is 8192 tokens"), vLLM, llama.cpp's
// server ("the request exceeds the available context size"), Ollama,
// LiteLLM and OpenRouter, Anthropic-style gateways ("prompt is too long").
var contextLengthPhrases = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"context size",
	"too many tokens",
	"prompt is too long",
	"input is too long",
}

// contextLength reports whether err, a response of status, refuses the
// request as longer than the model's context window: OpenAI's error code
// context_length_exceeded, or a 400 or 413 whose message says so.
func contextLength(err error, status int) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	var text string
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		if code, ok := apiErr.Code.(string); ok && code == "context_length_exceeded" {
			return true
		}
		text = apiErr.Message
	case errors.As(err, &reqErr):
		text = string(reqErr.Body)
	default:
		return false
	}
	text = strings.ToLower(text)
	for _, p := range contextLengthPhrases {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}
