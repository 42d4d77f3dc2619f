package agentfleet

import (
	"slices"
	"strconv"
)

// AppendJSON appends the JSON form of e to b and returns the extended
// buffer. It writes the same bytes as MarshalJSON, key order and escaping
// included, but builds the envelope and the common nested values by hand,
// without reflection; only values of arbitrary types (in arguments,
// partials, details, tool call blocks) go through encoding/json. On error
// it returns b as it was given.
func (e *Event) AppendJSON(b []byte) ([]byte, error) {
	n0 := len(b)
	b = slices.Grow(b, e.sizeHint())
	b, err := e.appendJSON(b)
	if err != nil {
		return b[:n0], err
	}
	return b, nil
}

// sizeHint estimates the length of e's JSON form, so that AppendJSON grows
// a short buffer once.
func (e *Event) sizeHint() int {
	n := 192 + len(e.TraceID) + len(e.Agent) + len(e.Session) + len(e.RunID) + len(e.Delta) + len(e.ToolCallID) + len(e.ToolName) +
		len(e.Worker) + len(e.Orchestrator) + len(e.Outcome) + len(e.Decision) + len(e.DecisionID) + len(e.Reason) + len(e.From) + len(e.To) + len(e.Strategy) + len(e.Budget) + len(e.Model) + len(e.Priority) + len(e.ErrorMessage) + len(e.Subject) + len(e.Payload)
	if e.Parent != nil {
		n += 96 + len(e.Parent.Agent) + len(e.Parent.Session) + len(e.Parent.RunID) + len(e.Parent.ToolCallID) + 16*len(e.Parent.Chain)
	}
	for k, v := range e.Arguments {
		n += 32 + len(k)
		if s, ok := v.(string); ok {
			n += len(s)
		}
	}
	if e.Message != nil {
		n += 256 + contentsSizeHint(e.Message.Content)
	}
	if e.Result != nil {
		n += 32 + contentsSizeHint(e.Result.Content) + 64*len(e.Result.Details)
	}
	return n
}

func contentsSizeHint(cs []Content) int {
	n := 0
	for i := range cs {
		n += 32 + len(cs[i].Text) + len(cs[i].Data)
	}
	return n
}

func (e *Event) appendJSON(b []byte) ([]byte, error) {
	var err error
	b = append(b, `{"type":`...)
	b = appendJSONString(b, string(e.Type))
	b = append(b, `,"agent":`...)
	b = appendJSONString(b, e.Agent)
	b = append(b, `,"session":`...)
	b = appendJSONString(b, e.Session)
	b = appendStringField(b, `,"run_id":`, e.RunID)
	b = append(b, `,"turn":`...)
	b = strconv.AppendInt(b, int64(e.Turn), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"time":`...)
	if b, err = appendJSONTime(b, e.Time); err != nil {
		return b, err
	}
	b = appendStringField(b, `,"trace_id":`, e.TraceID)
	b = appendStringField(b, `,"stop_reason":`, string(e.StopReason))
	b = appendStringField(b, `,"delta":`, e.Delta)
	if e.Message != nil {
		b = append(b, `,"assistant":`...)
		if b, err = appendAssistantMessage(b, e.Message); err != nil {
			return b, err
		}
	}
	b = appendStringField(b, `,"tool_call_id":`, e.ToolCallID)
	b = appendStringField(b, `,"tool_name":`, e.ToolName)
	if len(e.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		if b, err = appendJSONObject(b, e.Arguments); err != nil {
			return b, err
		}
	}
	if e.Partial != nil {
		b = append(b, `,"partial":`...)
		if b, err = appendJSONValue(b, e.Partial); err != nil {
			return b, err
		}
	}
	if e.Result != nil {
		b = append(b, `,"result":`...)
		if b, err = appendToolResult(b, e.Result); err != nil {
			return b, err
		}
	}
	if e.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		if b, err = appendJSONFloat(b, e.DurationMS); err != nil {
			return b, err
		}
	}
	b = appendStringField(b, `,"worker":`, e.Worker)
	b = appendStringField(b, `,"orchestrator":`, e.Orchestrator)
	if e.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(e.Attempt), 10)
	}
	b = appendStringField(b, `,"outcome":`, e.Outcome)
	if a := e.Annotations; a != nil {
		b = append(b, `,"annotations":{`...)
		n := len(b)
		for _, f := range [...]struct {
			key string
			on  bool
		}{{`"read_only":true`, a.ReadOnly}, {`"idempotent":true`, a.Idempotent}, {`"destructive":true`, a.Destructive}} {
			if f.on {
				if len(b) > n {
					b = append(b, ',')
				}
				b = append(b, f.key...)
			}
		}
		b = append(b, '}')
	}
	if e.Deadline != nil {
		b = append(b, `,"deadline":`...)
		if b, err = appendJSONTime(b, *e.Deadline); err != nil {
			return b, err
		}
	}
	b = appendStringField(b, `,"decision":`, e.Decision)
	b = appendStringField(b, `,"decision_id":`, e.DecisionID)
	b = appendStringField(b, `,"reason":`, e.Reason)
	b = appendStringField(b, `,"strategy":`, e.Strategy)
	b = appendIntField(b, `,"dropped_turns":`, e.DroppedTurns)
	b = appendIntField(b, `,"dropped_messages":`, e.DroppedMessages)
	b = appendIntField(b, `,"shortened_results":`, e.ShortenedResults)
	b = appendIntField(b, `,"tokens_before":`, e.TokensBefore)
	b = appendIntField(b, `,"tokens_after":`, e.TokensAfter)
	b = appendStringField(b, `,"budget":`, e.Budget)
	b = appendIntField(b, `,"limit":`, e.Limit)
	b = appendIntField(b, `,"used":`, e.Used)
	if b, err = appendFloatField(b, `,"limit_usd":`, e.LimitUSD); err != nil {
		return b, err
	}
	if b, err = appendFloatField(b, `,"used_usd":`, e.UsedUSD); err != nil {
		return b, err
	}
	b = appendStringField(b, `,"model":`, e.Model)
	b = appendStringField(b, `,"priority":`, e.Priority)
	b = appendStringField(b, `,"from":`, e.From)
	b = appendStringField(b, `,"to":`, e.To)
	b = appendStringField(b, `,"message":`, e.ErrorMessage)
	b = appendStringField(b, `,"subject":`, e.Subject)
	b = appendStringField(b, `,"payload":`, e.Payload)
	if e.Parent != nil {
		b = appendParent(append(b, `,"parent":`...), e.Parent)
	}
	if e.Type == EventToolEnd {
		b = append(b, `,"is_error":`...)
		b = strconv.AppendBool(b, e.IsError)
	}
	return append(b, '}'), nil
}

// appendStringField appends key and s, unless s is empty (omitempty).
func appendStringField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendIntField appends key and n, unless n is 0 (omitempty).
func appendIntField(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}

// appendFloatField appends key and f, unless f is 0 (omitempty).
func appendFloatField(b []byte, key string, f float64) ([]byte, error) {
	if f == 0 {
		return b, nil
	}
	return appendJSONFloat(append(b, key...), f)
}

func appendAssistantMessage(b []byte, m *AssistantMessage) ([]byte, error) {
	var err error
	b = append(b, `{"role":`...)
	b = appendJSONString(b, m.Role)
	b = append(b, `,"content":`...)
	if b, err = appendContents(b, m.Content); err != nil {
		return b, err
	}
	b = appendStringField(b, `,"api":`, m.API)
	b = appendStringField(b, `,"provider":`, m.Provider)
	b = appendStringField(b, `,"model":`, m.Model)
	if m.Usage != nil {
		if b, err = appendUsage(append(b, `,"usage":`...), m.Usage); err != nil {
			return b, err
		}
	}
	b = appendStringField(b, `,"stop_reason":`, string(m.StopReason))
	b = appendStringField(b, `,"error_message":`, m.ErrorMessage)
	b = appendStringField(b, `,"run_id":`, m.RunID)
	b = append(b, `,"timestamp":`...)
	if b, err = appendJSONTime(b, m.Timestamp); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

func appendToolResult(b []byte, r *ToolResult) ([]byte, error) {
	var err error
	b = append(b, `{"content":`...)
	if b, err = appendContents(b, r.Content); err != nil {
		return b, err
	}
	if len(r.Details) > 0 {
		b = append(b, `,"details":`...)
		if b, err = appendJSONObject(b, r.Details); err != nil {
			return b, err
		}
	}
	if r.Usage != nil {
		if b, err = appendUsage(append(b, `,"usage":`...), r.Usage); err != nil {
			return b, err
		}
	}
	if r.Terminate {
		b = append(b, `,"terminate":true`...)
	}
	return append(b, '}'), nil
}

// appendContents appends a list of content blocks; nil is null. Tool call
// blocks whose arguments are raw JSON that Marshal would compact or escape,
// and raw tool_calls blocks, go to Marshal.
func appendContents(b []byte, cs []Content) ([]byte, error) {
	if cs == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		c := &cs[i]
		n0 := len(b)
		b = append(b, `{"type":`...)
		b = appendJSONString(b, c.Type)
		b = appendStringField(b, `,"text":`, c.Text)
		b = appendStringField(b, `,"data":`, c.Data)
		b = appendStringField(b, `,"mime_type":`, c.MIMEType)
		b = appendStringField(b, `,"id":`, c.ID)
		b = appendStringField(b, `,"name":`, c.Name)
		raw := true
		if len(c.Arguments) > 0 {
			b, raw = appendRawJSON(append(b, `,"arguments":`...), c.Arguments)
		}
		if !raw || len(c.ToolCalls) > 0 {
			// Arguments to compact or escape, and raw tool calls, as
			// Marshal writes them.
			var err error
			if b, err = appendMarshal(b[:n0], c); err != nil {
				return b, err
			}
			continue
		}
		b = appendStringField(b, `,"$ref":`, c.Ref)
		b = appendIntField(b, `,"size":`, int(c.Size))
		b = appendStringField(b, `,"sha256":`, c.SHA256)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

func appendUsage(b []byte, u *Usage) ([]byte, error) {
	b = append(b, `{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(u.InputTokens), 10)
	b = append(b, `,"output_tokens":`...)
	b = strconv.AppendInt(b, int64(u.OutputTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	b = appendIntField(b, `,"cached_input_tokens":`, u.CachedInputTokens)
	b, err := appendFloatField(b, `,"cost":`, u.Cost)
	return append(b, '}'), err
}
