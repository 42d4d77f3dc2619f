package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	openai "github.com/sashabaranov/go-openai"
)

// errTruncated says that a stream ended, without a transport error, before
// its finish_reason: a proxy cut it, or the server gave up.
var errTruncated = errors.New("stream ended before its finish_reason")

// readStream reads a chat completion stream to its end, assembling its
// reply and passing each text delta to deliver as it arrives.
//
// Tool calls come in pieces: the first piece of a call carries its index, id
// and name, the next ones more of its argument text under the same index.
// Pieces of several calls may interleave. A piece without an index (sent
// by some servers) belongs to the call named by its id, or to the last call.
//
// A read error after the finish_reason (a connection cut before the usage
// chunk or [DONE]) is ignored, as the reply is whole; any other error is
// returned, wrapped with the number of the chunk that failed.
func readStream(stream *openai.ChatCompletionStream, deliver func(string)) (*reply, error) {
	r := new(reply)
	s := streamState{reply: r, last: -1}
	for n := 1; ; n++ {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var syntax *json.SyntaxError
			var typ *json.UnmarshalTypeError
			if r.finish != "" && !errors.As(err, &syntax) && !errors.As(err, &typ) {
				break
			}
			return r, fmt.Errorf("stream chunk %d: %w", n, err)
		}
		s.add(&chunk, deliver)
	}
	if r.finish == "" {
		return r, errTruncated
	}
	return r, nil
}

// streamState assembles the chunks of one stream.
type streamState struct {
	reply *reply
	// last is the index of the last tool call piece; ids maps call ids to
	// indexes, for pieces without an index.
	last int
	ids  map[string]int
}

func (s *streamState) add(chunk *openai.ChatCompletionStreamResponse, deliver func(string)) {
	r := s.reply
	if r.model == "" {
		r.model = chunk.Model
	}
	if chunk.Usage != nil {
		u := *chunk.Usage
		r.usage = &u
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue // only one choice is asked for
		}
		for _, text := range []string{ch.Delta.Content, ch.Delta.Refusal} {
			if text != "" {
				r.text.WriteString(text)
				deliver(text)
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			c := r.call(s.index(tc))
			if tc.ID != "" {
				c.id = tc.ID
			}
			if tc.Function.Name != "" {
				c.name = tc.Function.Name
			}
			c.args.WriteString(tc.Function.Arguments)
		}
		if fc := ch.Delta.FunctionCall; fc != nil {
			c := r.call(0)
			if fc.Name != "" {
				c.name = fc.Name
			}
			c.args.WriteString(fc.Arguments)
		}
		if ch.FinishReason != "" && ch.FinishReason != openai.FinishReasonNull {
			r.finish = ch.FinishReason
		}
	}
}

// index returns the index of the call that the piece tc belongs to.
func (s *streamState) index(tc openai.ToolCall) int {
	i := s.last
	switch {
	case tc.Index != nil:
		i = *tc.Index
	case tc.ID != "":
		if j, ok := s.ids[tc.ID]; ok {
			i = j
		} else {
			i = len(s.reply.calls)
			for s.reply.calls[i] != nil {
				i++
			}
		}
	case i < 0:
		i = 0
	}
	if tc.ID != "" {
		if s.ids == nil {
			s.ids = make(map[string]int)
		}
		s.ids[tc.ID] = i
	}
	s.last = i
	return i
}
