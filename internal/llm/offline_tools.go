package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// The offline model writes tools too, so that write_tool (spec section 15)
// can be tried without a key: "make a tool that doubles numbers" makes it
// call write_tool with a Starlark definition of its own, then, once the
// fleet serves the new tool, call it on an example and answer with what
// it returned. It knows a few tools only (offlineRecipes); they are enough
// to see the whole path: the dry run on a script worker, the bucket, the
// fleet's discovery, and a call of the new tool on a worker.

// writeToolName is the tool the offline model writes tools with (the
// name of script.WriteToolName, which this package does not import).
const writeToolName = "write_tool"

// toolRequestRe matches a request to write a tool; its group is what the
// tool should do.
var toolRequestRe = regexp.MustCompile(`(?is)\b(?:make|write|create|build|add|give\s+me)\s+(?:me\s+)?(?:a|an|the)\s+(?:new\s+|small\s+|little\s+|simple\s+)*tool\b\s*(?:that|which|to|for)?\s*(.*)`)

// numberRe matches the numbers of a request, for the example call.
var numberRe = regexp.MustCompile(`-?\d+(?:\.\d+)?`)

// quotedRe matches a quoted text of a request, for the example call.
var quotedRe = regexp.MustCompile(`"([^"]+)"|'([^']+)'`)

// offlineRecipe is a tool the offline model can write: its definition,
// the example call it makes once the tool is served, and the sentence it
// answers with.
type offlineRecipe struct {
	// match tells whether what the tool should do is this recipe's.
	match *regexp.Regexp
	// def is the write_tool arguments.
	def map[string]any
	// example returns the arguments of the example call, from the request
	// (its numbers or quoted text) or a default.
	example func(request string) map[string]any
	// answer returns the final answer from the example's arguments and
	// the tool's result, after what the model did ("I wrote the tool
	// double; " or "The tool double exists already; ").
	answer func(args map[string]any, result string) string
}

// offlineFormatNumber is Starlark that prints a whole float as an integer,
// so that 2.5 doubled is 5 and not 5.0, and 21 doubled 42.
const offlineFormatNumber = `def fmt(x):
    if type(x) == "float" and x == int(x):
        return str(int(x))
    return str(x)
`

var offlineRecipes = []offlineRecipe{
	{
		match: regexp.MustCompile(`(?i)\bdoubl|\btwice\b|\btimes\s+two\b|\bmultipl\w*\s+by\s+(?:2|two)\b`),
		def: map[string]any{
			"name": "double", "label": "Double", "description": "Doubles the number n.",
			"input_schema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"n": map[string]any{"type": "number", "description": "the number to double"}},
				"required":   []string{"n"},
			},
			"code":        offlineFormatNumber + "\ndef execute(args):\n    return fmt(args[\"n\"] * 2)\n",
			"annotations": map[string]any{"read_only": true, "idempotent": true},
		},
		example: func(request string) map[string]any {
			return map[string]any{"n": requestNumbers(request, 21)[0]}
		},
		answer: func(args map[string]any, result string) string {
			return fmt.Sprintf("%s doubled is %s.", formatNumber(args["n"]), result)
		},
	},
	{
		match: regexp.MustCompile(`(?i)\badd|\bsums?\b|\bplus\b`),
		def: map[string]any{
			"name": "add", "label": "Add", "description": "Adds the numbers a and b.",
			"input_schema": map[string]any{
				"type": "object",
				"properties": map[string]any{
					"a": map[string]any{"type": "number", "description": "the first number"},
					"b": map[string]any{"type": "number", "description": "the second number"},
				},
				"required": []string{"a", "b"},
			},
			"code":        offlineFormatNumber + "\ndef execute(args):\n    return fmt(args[\"a\"] + args[\"b\"])\n",
			"annotations": map[string]any{"read_only": true, "idempotent": true},
		},
		example: func(request string) map[string]any {
			n := requestNumbers(request, 2, 3)
			return map[string]any{"a": n[0], "b": n[1]}
		},
		answer: func(args map[string]any, result string) string {
			return fmt.Sprintf("%s + %s is %s.", formatNumber(args["a"]), formatNumber(args["b"]), result)
		},
	},
	{
		match: regexp.MustCompile(`(?i)\brevers|\bbackwards?\b`),
		def: map[string]any{
			"name": "reverse", "label": "Reverse", "description": "Reverses the text, character by character.",
			"input_schema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"text": map[string]any{"type": "string", "description": "the text to reverse"}},
				"required":   []string{"text"},
			},
			"code":        "def execute(args):\n    return args[\"text\"][::-1]\n",
			"annotations": map[string]any{"read_only": true, "idempotent": true},
		},
		example: func(request string) map[string]any {
			text := "hello world"
			if m := quotedRe.FindStringSubmatch(request); m != nil {
				text = m[1] + m[2]
			}
			return map[string]any{"text": text}
		},
		answer: func(args map[string]any, result string) string {
			return fmt.Sprintf("%q reversed is %q.", args["text"], result)
		},
	},
}

// offlineToolRequest returns the recipe that a request to write a tool
// asks for, and whether the text is such a request at all (a request for
// a tool that no recipe makes returns nil and true).
func offlineToolRequest(text string) (*offlineRecipe, bool) {
	m := toolRequestRe.FindStringSubmatch(text)
	if m == nil {
		return nil, false
	}
	for i := range offlineRecipes {
		if offlineRecipes[i].match.MatchString(m[1]) {
			return &offlineRecipes[i], true
		}
	}
	return nil, true
}

// offlineNoRecipe is the answer to a request for a tool that the offline
// model cannot write.
const offlineNoRecipe = "This is the offline model of agentfleet: it writes only a few tools itself, " +
	"to show write_tool at work: \"make a tool that doubles numbers\", \"write a tool that adds two numbers\" " +
	"and \"create a tool that reverses text\". A real model writes any tool: set OPENAI_API_KEY " +
	"(and OPENAI_BASE_URL for another OpenAI-compatible server)."

// planToolRequest returns the text and calls that answer a request to
// write a tool, in its first turn: write_tool with the recipe's
// definition, or, when the tool is there already, a call of it.
func planToolRequest(request string, r *offlineRecipe, defs []agentfleet.ToolDef) (string, []offlineCall) {
	if r == nil {
		return offlineNoRecipe, nil
	}
	name := r.def["name"].(string)
	if hasTool(defs, name) {
		return fmt.Sprintf("The fleet has a tool %s already; I call it instead of writing it again.", name),
			[]offlineCall{{tool: name, args: r.example(request)}}
	}
	if !hasTool(defs, writeToolName) {
		return fmt.Sprintf("I would need the tool %s to write the tool %s, but it is not available to me: "+
			"the orchestrator offers it when NATS has JetStream and the agent's profile allows it.", writeToolName, name), nil
	}
	return "", []offlineCall{{tool: writeToolName, args: r.def}}
}

// followToolRequest returns what comes after a tool result in a
// conversation whose last user message asked for a tool: after write_tool,
// the example call of the new tool; after that call, the answer. ok is
// false when results are not those of the request's tools, which are then
// summarized as any results are.
//
// wrote says whether write_tool stored the tool since the request: the
// answer says so, or that the tool existed already.
func followToolRequest(request string, results []*agentfleet.ToolResultMessage, defs []agentfleet.ToolDef, wrote bool) (text string, calls []offlineCall, ok bool) {
	r, asked := offlineToolRequest(request)
	if !asked || r == nil || len(results) != 1 {
		return "", nil, false
	}
	name := r.def["name"].(string)
	res := results[0]
	switch {
	case res.ToolName == writeToolName && !res.IsError && hasTool(defs, name):
		return "", []offlineCall{{tool: name, args: r.example(request)}}, true
	case res.ToolName == name && !res.IsError:
		did := "The tool " + name + " exists already; "
		if wrote {
			did = "I wrote the tool " + name + "; "
		}
		return did + r.answer(r.example(request), strings.TrimSpace(resultText(res.Content))), nil, true
	}
	return "", nil, false
}

// offlineUse returns the call that text asks for by a written tool's name
// and its arguments ("double 7"), once the fleet serves that tool.
func offlineUse(text string, defs []agentfleet.ToolDef) (offlineCall, bool) {
	fields := strings.Fields(text)
	if len(fields) < 2 {
		return offlineCall{}, false
	}
	for i := range offlineRecipes {
		r := &offlineRecipes[i]
		if name := r.def["name"].(string); strings.EqualFold(fields[0], name) && hasTool(defs, name) {
			return offlineCall{tool: name, args: r.example(text)}, true
		}
	}
	return offlineCall{}, false
}

// wroteTool reports whether write_tool stored a tool since the last user
// message of msgs.
func wroteTool(msgs []agentfleet.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		switch m := msgs[i].(type) {
		case *agentfleet.UserMessage:
			return false
		case *agentfleet.ToolResultMessage:
			if m.ToolName == writeToolName && !m.IsError {
				return true
			}
		}
	}
	return false
}

// hasTool reports whether defs offers the tool name.
func hasTool(defs []agentfleet.ToolDef, name string) bool {
	for _, d := range defs {
		if d.Name == name {
			return true
		}
	}
	return false
}

// requestNumbers returns the numbers of a request, as JSON numbers, or
// defaults when it holds fewer than len(defaults).
func requestNumbers(request string, defaults ...float64) []json.Number {
	found := numberRe.FindAllString(request, -1)
	out := make([]json.Number, len(defaults))
	for i, d := range defaults {
		if len(found) >= len(defaults) {
			out[i] = json.Number(found[i])
		} else {
			out[i] = json.Number(strconv.FormatFloat(d, 'f', -1, 64))
		}
	}
	return out
}

// formatNumber prints a number of an example's arguments.
func formatNumber(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprint(v)
}
