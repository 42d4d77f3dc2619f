package mcpbridge

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// Spec says which MCP server a bridge connects to: a command that speaks
// MCP on its standard input and output, or the URL of a streamable HTTP
// endpoint. Exactly one of Command and URL is set.
type Spec struct {
	// Name names the server in logs, errors and the micro service name
	// (mcp-<Name>); a single NATS subject token.
	Name string
	// Command is the program and its arguments (stdio transport).
	Command []string
	// URL is the streamable HTTP endpoint (http or https).
	URL string
	// Prefix is put before every tool name of the server; empty means
	// the default, Name+"_" (see ToolPrefix).
	Prefix string
	// Unprefixed serves the server's tools under their own names, with no
	// prefix: the names of the fleet's built-in tools and of the worker's
	// own tools are still refused, tool by tool.
	Unprefixed bool
}

// ToolPrefix returns what is put before each tool name of the server:
// none when Unprefixed, else Prefix, by default Name+"_". The tools of an
// MCP server are namespaced by default so that a server cannot take a
// fleet tool's name: a server that lists "echo" is served as
// <server>_echo, never as the built-in echo.
func (s Spec) ToolPrefix() string {
	switch {
	case s.Unprefixed:
		return ""
	case s.Prefix != "":
		return s.Prefix
	}
	return s.Name + "_"
}

// ParseSpec reads the value of a --mcp flag: NAME=COMMAND ARGS… for a
// stdio server, NAME=URL (http:// or https://) for a streamable HTTP
// one. The command is split on blanks; single or double quotes keep
// blanks inside one argument. The error quotes the value and says what
// is wrong with it.
func ParseSpec(s string) (Spec, error) {
	name, target, ok := strings.Cut(s, "=")
	name, target = strings.TrimSpace(name), strings.TrimSpace(target)
	if !ok || name == "" {
		return Spec{}, fmt.Errorf("--mcp %q: want NAME=COMMAND ARGS… or NAME=URL", s)
	}
	if err := bus.CheckToken("MCP server", name); err != nil {
		return Spec{}, fmt.Errorf("--mcp %q: %w", s, err)
	}
	if target == "" {
		return Spec{}, fmt.Errorf("--mcp %q: no command or URL after %q", s, name+"=")
	}
	sp := Spec{Name: name}
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") {
		u, err := url.Parse(target)
		if err != nil {
			return Spec{}, fmt.Errorf("--mcp %q: URL: %v", s, err)
		}
		if u.Host == "" {
			return Spec{}, fmt.Errorf("--mcp %q: URL %q has no host", s, target)
		}
		sp.URL = target
		return sp, nil
	}
	args, err := splitCommand(target)
	if err != nil {
		return Spec{}, fmt.Errorf("--mcp %q: %w", s, err)
	}
	sp.Command = args
	return sp, nil
}

// ParsePrefix reads the value of a --mcp-prefix flag, NAME=PREFIX; an
// empty PREFIX (NAME=) asks for the server's tools unprefixed.
func ParsePrefix(s string) (name, prefix string, err error) {
	name, prefix, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return "", "", fmt.Errorf("--mcp-prefix %q: want NAME=PREFIX, such as fs=files_, or NAME= for no prefix", s)
	}
	if prefix == "" {
		return name, "", nil
	}
	if err := bus.CheckToken("tool name prefix", prefix); err != nil {
		return "", "", fmt.Errorf("--mcp-prefix %q: %w", s, err)
	}
	return name, prefix, nil
}

// splitCommand splits a command line on blanks, keeping quoted parts
// together; it does no expansion.
func splitCommand(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		quote rune
		in    bool // an argument has started (an empty "" counts)
		at    int  // where the open quote is
	)
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in, at = r, true, i
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c at column %d of the command", quote, at+1)
	}
	if in {
		args = append(args, cur.String())
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("the command is empty")
	}
	return args, nil
}

// String returns the spec as a --mcp flag value would give it.
func (s Spec) String() string {
	if s.URL != "" {
		return s.Name + "=" + s.URL
	}
	return s.Name + "=" + strings.Join(s.Command, " ")
}
