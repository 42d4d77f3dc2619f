package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultAgent is the agent whose tools are served when the client names
// none.
const DefaultAgent = "default"

// AskPrefix begins the name of every agent's ask tool: ask_<agent>.
const AskPrefix = "ask_"

// Config configures the MCP server. Backend is required; every other
// field is optional and its zero value means the documented default.
type Config struct {
	Backend Backend
	// Token, when set, is the bearer token that every HTTP request must
	// carry (Authorization: Bearer <token>); stdio needs none.
	Token string
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Version is the server's version in the MCP handshake; default
	// "0.1.0".
	Version string
	// Refresh is how often ServeStdio lists the agent's tools again, and
	// tells the client of a change (tools/list_changed); default 5s.
	Refresh time.Duration
}

// Server builds the MCP servers of agents over a Backend.
type Server struct {
	cfg    Config
	log    *slog.Logger
	warned sync.Map // "tool\x00why" → true: each left-out tool is logged once
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "0.1.0"
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	return &Server{cfg: cfg, log: cfg.Logger}
}

// ForAgent returns an MCP server with agent's tools and every agent's ask
// tool, as they are now. It fails for an unknown agent.
func (s *Server) ForAgent(ctx context.Context, agent string) (*mcp.Server, error) {
	es, err := s.entries(ctx, agent)
	if err != nil {
		return nil, err
	}
	srv := s.newServer(agent)
	for _, e := range es {
		srv.AddTool(e.tool, e.handler)
	}
	return srv, nil
}

func (s *Server) newServer(agent string) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "agentfleet", Title: "agentfleet: tools of agent " + agent, Version: s.cfg.Version}, nil)
}

// entry is one MCP tool of a server, with its handler; key tells whether
// it changed.
type entry struct {
	tool    *mcp.Tool
	handler mcp.ToolHandler
	key     string
}

// entries returns the ask tools of every agent, then agent's tools.
func (s *Server) entries(ctx context.Context, agent string) ([]entry, error) {
	defs, err := s.cfg.Backend.Tools(ctx, agent)
	if err != nil {
		return nil, err
	}
	agents, err := s.cfg.Backend.Agents(ctx)
	if err != nil {
		return nil, err
	}
	var es []entry
	asks := map[string]bool{}
	for _, a := range agents {
		asks[AskPrefix+a] = true
		es = append(es, newEntry(askTool(a), s.askHandler(a)))
	}
	for _, d := range defs {
		if asks[d.Name] {
			s.warnOnce(d.Name, "fleet tool not served over MCP: an agent's ask tool has its name", nil)
			continue
		}
		t, err := Tool(d)
		if err != nil {
			s.warnOnce(d.Name, "fleet tool not served over MCP", err)
			continue
		}
		es = append(es, newEntry(t, s.toolHandler(agent, d.Name)))
	}
	return es, nil
}

func newEntry(t *mcp.Tool, h mcp.ToolHandler) entry {
	b, _ := json.Marshal(t)
	return entry{tool: t, handler: h, key: string(b)}
}

// warnOnce logs why a tool is left out, once per tool and reason: the
// servers are built per request.
func (s *Server) warnOnce(tool, msg string, err error) {
	key := tool + "\x00" + msg + fmt.Sprint(err)
	if _, seen := s.warned.LoadOrStore(key, true); seen {
		return
	}
	if err != nil {
		s.log.Warn(msg, "tool", tool, "err", err)
	} else {
		s.log.Warn(msg, "tool", tool)
	}
}

// Tool turns a fleet tool definition into an MCP tool: the same name,
// title, description and input schema (which must be a JSON object
// schema), the output schema when it describes an object, and the
// annotations as hints (readOnlyHint, idempotentHint, destructiveHint;
// openWorldHint is left out, so MCP's default of open world holds).
func Tool(d agentfleet.ToolDef) (*mcp.Tool, error) {
	t := &mcp.Tool{Name: d.Name, Title: d.Label, Description: d.Description}
	in := d.InputSchema
	if len(in) == 0 {
		in = json.RawMessage(`{"type":"object"}`)
	}
	if !objectSchema(in) {
		return nil, fmt.Errorf("input schema %s is not a JSON object schema with \"type\": \"object\"", clip(in))
	}
	t.InputSchema = in
	if len(d.OutputSchema) > 0 && objectSchema(d.OutputSchema) {
		t.OutputSchema = d.OutputSchema
	}
	destructive := d.Annotations.Destructive
	t.Annotations = &mcp.ToolAnnotations{
		ReadOnlyHint: d.Annotations.ReadOnly, IdempotentHint: d.Annotations.Idempotent,
		DestructiveHint: &destructive,
	}
	return t, nil
}

func objectSchema(raw json.RawMessage) bool {
	var m map[string]any
	return json.Unmarshal(raw, &m) == nil && m["type"] == "object"
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// toolHandler runs the fleet tool name for agent: partial results go to
// the client as progress notifications (when it sent a progress token),
// with the partial's JSON as the message.
func (s *Server) toolHandler(agent, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			if err := json.Unmarshal(raw, &args); err != nil {
				return errorResult(fmt.Sprintf("Tool %s: the arguments are not a JSON object: %v", name, err)), nil
			}
		}
		if args == nil {
			args = map[string]any{}
		}
		progress := progressFunc(ctx, req, func(p any) string {
			b, _ := json.Marshal(p)
			return string(b)
		})
		res, isError, err := s.cfg.Backend.CallTool(ctx, agent, agentfleet.ToolCall{ID: "mcp-" + uuid.NewString(), Name: name, Arguments: args}, func(p any) { progress(p) })
		if err != nil {
			return errorResult(fmt.Sprintf("Tool %s: %v", name, err)), nil
		}
		return Result(res, isError), nil
	}
}

// progressFunc returns a function that sends one progress notification
// per call, numbered from 1, with describe's text as the message; it does
// nothing when the request has no progress token.
func progressFunc[T any](ctx context.Context, req *mcp.CallToolRequest, describe func(T) string) func(T) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func(T) {}
	}
	var mu sync.Mutex
	n := 0
	return func(v T) {
		msg := describe(v)
		if msg == "" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg}); err != nil && ctx.Err() == nil {
			slog.Debug("MCP progress notification", "err", err)
		}
	}
}

// Result turns a fleet result into an MCP one: text and image blocks, the
// details as structured content.
func Result(r *agentfleet.ToolResult, isError bool) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Content: []mcp.Content{}, IsError: isError}
	if r == nil {
		return out
	}
	for _, c := range r.Content {
		switch c.Type {
		case agentfleet.ContentText:
			out.Content = append(out.Content, &mcp.TextContent{Text: c.Text})
		case agentfleet.ContentImage:
			out.Content = append(out.Content, &mcp.ImageContent{Data: decodeBase64(c.Data), MIMEType: c.MIMEType})
		default:
			b, _ := json.Marshal(c)
			out.Content = append(out.Content, &mcp.TextContent{Text: string(b)})
		}
	}
	if len(r.Details) > 0 {
		out.StructuredContent = r.Details
	}
	return out
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
}

// askTool is the MCP tool that runs a turn of agent.
func askTool(agent string) *mcp.Tool {
	f := false
	return &mcp.Tool{
		Name:  AskPrefix + agent,
		Title: "Ask agent " + agent,
		Description: fmt.Sprintf("Send a message to agent %s and get its final answer after a whole agent turn (its model calls and tool calls). "+
			"Give the same session to continue a conversation; without one, each ask starts a new session.", agent),
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"session":{"type":"string","pattern":"^[A-Za-z0-9_-]{1,128}$","description":"the conversation to continue, letters, digits, '-' and '_' (default: a new one)"},` +
			`"message":{"type":"string","minLength":1,"description":"the user's message"}},` +
			`"required":["message"],"additionalProperties":false}`),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &f},
	}
}

// askHandler runs one turn of agent: the run's events go to the client as
// progress notifications, its final message is the result.
func (s *Server) askHandler(agent string) mcp.ToolHandler {
	name := AskPrefix + agent
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct {
			Session string `json:"session"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
			return errorResult(fmt.Sprintf("Tool %s: the arguments are not an object of session and message: %v", name, err)), nil
		}
		if strings.TrimSpace(args.Message) == "" {
			return errorResult(fmt.Sprintf("Tool %s: message is empty", name)), nil
		}
		if args.Session == "" {
			args.Session = "mcp-" + uuid.NewString()
		} else if err := bus.CheckToken("session", args.Session); err != nil {
			return errorResult(fmt.Sprintf("Tool %s: %v", name, err)), nil
		}
		progress := progressFunc(ctx, req, describeEvent)
		final, err := s.cfg.Backend.Ask(ctx, agent, args.Session, args.Message, progress)
		if err != nil {
			return errorResult(fmt.Sprintf("Tool %s: %v", name, err)), nil
		}
		out := &mcp.CallToolResult{Content: []mcp.Content{}}
		if text := agentfleet.JoinText(final.Content); text != "" {
			out.Content = append(out.Content, &mcp.TextContent{Text: text})
		}
		switch final.StopReason {
		case agentfleet.StopReasonError, agentfleet.StopReasonAborted:
			out.IsError = true
			msg := fmt.Sprintf("the run ended with stop reason %s", final.StopReason)
			if final.ErrorMessage != "" {
				msg += ": " + final.ErrorMessage
			}
			out.Content = append(out.Content, &mcp.TextContent{Text: msg})
		}
		out.StructuredContent = map[string]any{"session": args.Session, "stop_reason": string(final.StopReason)}
		return out, nil
	}
}

// describeEvent is the progress message of an event of an ask's run;
// text deltas are left out, the final message is the result.
func describeEvent(e *agentfleet.Event) string {
	switch e.Type {
	case agentfleet.EventMessageUpdate, agentfleet.EventMessageStart:
		return ""
	case agentfleet.EventToolStart:
		return fmt.Sprintf("%s %s", e.Type, e.ToolName)
	case agentfleet.EventToolUpdate:
		b, _ := json.Marshal(e.Partial)
		return fmt.Sprintf("%s %s %s", e.Type, e.ToolName, b)
	case agentfleet.EventToolEnd:
		return fmt.Sprintf("%s %s %s", e.Type, e.ToolName, e.Outcome)
	case agentfleet.EventTurnStart, agentfleet.EventTurnEnd:
		return fmt.Sprintf("%s %d", e.Type, e.Turn)
	case agentfleet.EventRunEnd:
		return fmt.Sprintf("%s %s", e.Type, e.StopReason)
	case agentfleet.EventError:
		return fmt.Sprintf("%s %s", e.Type, e.ErrorMessage)
	}
	return string(e.Type)
}

// decodeBase64 decodes an image block's data; the SDK encodes it again.
func decodeBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return []byte(s)
	}
	return b
}
