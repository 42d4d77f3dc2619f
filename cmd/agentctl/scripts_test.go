package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/worker"
)

// startScriptWorker starts an embedded NATS server with JetStream and a
// tool worker that serves the built-in tools and the scripted ones, which
// creates the bucket of the scripted tools. It returns the URL clients
// connect to.
func startScriptWorker(t *testing.T) string {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := bustest.MustRunNATS(t)
	w, err := worker.Start(bustest.MustConnect(t, s), worker.Config{Logger: quiet, Scripts: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop() })
	return s.ClientURL()
}

// writeFile writes a file of the test's temporary directory and returns
// its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// adderV1 is a definition in the form tools export prints, so that an
// import and an export give the file back byte for byte: the keys of
// input_schema keep their order, and <, > and & are not escaped.
const adderV1 = `{
  "name": "adder",
  "label": "Adder",
  "description": "Adds a & b, whether a < b or a > b.",
  "input_schema": {
    "type": "object",
    "properties": {
      "a": {
        "type": "number"
      },
      "b": {
        "type": "number"
      }
    },
    "required": [
      "a",
      "b"
    ]
  },
  "code": "def execute(args):\n    return str(args[\"a\"] + args[\"b\"])\n",
  "parallel": true,
  "annotations": {
    "read_only": true
  }
}
`

var adderV2 = strings.Replace(strings.Replace(adderV1, `"label": "Adder"`, `"label": "Adder 2"`, 1),
	`return str(args[\"a\"] + args[\"b\"])\n`, `s = args[\"a\"] + args[\"b\"]\n    return \"sum: \" + str(s)\n`, 1)

func TestToolsImportExport(t *testing.T) {
	url := startScriptWorker(t)
	v1 := writeFile(t, "adder.json", adderV1)
	stdout, stderr, err := run(t, url, "tools", "import", v1)
	if err != nil || stdout != "Tool adder imported (revision 1)\n" || stderr != "" {
		t.Fatalf("import: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	stdout, _, err = run(t, url, "tools", "export", "adder")
	if err != nil || stdout != adderV1 {
		t.Fatalf("export: err %v, got\n%s\nwant\n%s", err, stdout, adderV1)
	}

	// A second import of the name needs replace.
	_, _, err = run(t, url, "tools", "import", v1)
	if err == nil || !strings.Contains(err.Error(), "agentctl tools import: "+v1+": a scripted tool named adder already exists (revision 1 of ") || !strings.Contains(err.Error(), "give --replace") {
		t.Errorf("import without replace: err = %v", err)
	}
	v2 := writeFile(t, "adder2.json", adderV2)
	if stdout, stderr, err := run(t, url, "tools", "import", "--replace", v2); err != nil || stdout != "Tool adder imported (revision 2)\n" {
		t.Fatalf("import --replace: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	// "replace": true in the file does the same; "-" reads standard input.
	v3 := strings.Replace(adderV1, `"name": "adder",`, `"name": "adder", "replace": true,`, 1)
	p := newProg(t, url, strings.NewReader(v3), "tools", "import", "--json", "-")
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	var imported struct {
		Name               string
		Revision, Replaced uint64
	}
	if err := json.Unmarshal([]byte(p.stdout.String()), &imported); err != nil || imported.Name != "adder" || imported.Revision != 3 || imported.Replaced != 2 {
		t.Errorf("import --json -: %q (%v)", p.stdout, err)
	}

	stdout, _, err = run(t, url, "tools", "history", "adder")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	want := []string{
		`^1  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+  Adder: Adds a & b, whether a < b or a > b\. \[2 lines of code\]$`,
		`^2  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+  Adder 2: Adds a & b, whether a < b or a > b\. \[3 lines of code\]$`,
		`^3  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \S+  Adder: .* \[2 lines of code\]  \(current\)$`,
	}
	if len(lines) != len(want) {
		t.Fatalf("history printed %d lines, want %d:\n%s", len(lines), len(want), stdout)
	}
	for i, w := range want {
		if !regexp.MustCompile(w).MatchString(lines[i]) {
			t.Errorf("history line %q does not match %s", lines[i], w)
		}
	}

	// Earlier revisions, as they were imported.
	for rev, want := range map[string]string{"1": adderV1, "2": adderV2, "3": adderV1} {
		stdout, _, err = run(t, url, "tools", "export", "--revision", rev, "adder")
		if err != nil || stdout != want {
			t.Errorf("export --revision %s: err %v, got\n%s\nwant\n%s", rev, err, stdout, want)
		}
	}
	_, _, err = run(t, url, "tools", "export", "adder", "--revision", "99")
	if err == nil || !strings.Contains(err.Error(), "agentctl tools export: tool adder has no revision 99: the bucket keeps its revisions 1, 2, 3") {
		t.Errorf("export --revision 99: err = %v", err)
	}

	stdout, _, err = run(t, url, "tools", "delete", "adder")
	if err != nil || stdout != "Tool adder deleted (its last revision was 3)\n" {
		t.Fatalf("delete: err %v, stdout %q", err, stdout)
	}
	_, _, err = run(t, url, "tools", "export", "adder")
	if err == nil || !strings.Contains(err.Error(), "the scripted tool adder was deleted (revision 4, ") {
		t.Errorf("export after delete: err = %v", err)
	}
	stdout, _, err = run(t, url, "tools", "history", "--json", "adder")
	if err != nil {
		t.Fatal(err)
	}
	var hist []struct {
		Revision   uint64
		Deleted    bool
		Definition *struct{ Label string }
	}
	if err := json.Unmarshal([]byte(stdout), &hist); err != nil || len(hist) != 4 || !hist[3].Deleted || hist[3].Definition != nil || hist[1].Definition == nil || hist[1].Definition.Label != "Adder 2" {
		t.Errorf("history --json: %s (%v)", stdout, err)
	}
	// The deleted tool comes back from its history, checked again.
	p = newProg(t, url, strings.NewReader(adderV2), "tools", "import", "-")
	if err := p.Run(t.Context()); err != nil || p.stdout.String() != "Tool adder imported (revision 5)\n" {
		t.Errorf("import after delete: err %v, stdout %q", err, p.stdout)
	}
}

func TestToolsImportChecks(t *testing.T) {
	url := startScriptWorker(t)
	def := func(name, schema, code string) string {
		b, _ := json.Marshal(map[string]any{"name": name, "label": "L", "description": "Does things.", "input_schema": json.RawMessage(schema), "code": code})
		return string(b)
	}
	const schema = `{"type":"object","properties":{"n":{"type":"integer"}}}`
	tests := []struct {
		name, file string
		want       []string
	}{
		{"syntax error", def("broken", schema, "def execute(args):\n    n = args[\"n\"]\n    return str(n +\n"), []string{
			": tool broken: code:4:1: syntax error: ",
			"\n  code line 3:     return str(n +\n  code line 4: \n" + strings.Repeat(" ", 15) + "^",
		}},
		{"syntax error in a line", def("broken", schema, "def execute(args):\n    return str(args[\"n\"] +* 2)\n"), []string{
			": tool broken: code:2:27: syntax error: ",
			"\n  code line 2:     return str(args[\"n\"] +* 2)\n" + strings.Repeat(" ", 15+26) + "^",
		}},
		{"runtime error", def("divider", schema, "def execute(args):\n\treturn str(1 // 0)\n"), []string{
			"divider: the dry run of execute with the sample arguments",
			"code:2:",
			"\n  code line 2: \treturn str(1 // 0)\n",
		}},
		{"built-in tool", def("calculator", schema, "def execute(args):\n    return \"x\"\n"), []string{
			": a tool named calculator already exists (Calculator: ",
			"is not a scripted tool, so it cannot be replaced; choose another name",
		}},
		{"built-in tool with replace", strings.Replace(def("calculator", schema, "def execute(args):\n    return \"x\"\n"), `{`, `{"replace":true,`, 1), []string{
			": a tool named calculator already exists (Calculator: ",
		}},
		{"orchestrator's tool", def("write_tool", schema, "def execute(args):\n    return \"x\"\n"), []string{
			": the name write_tool is taken by a tool of the orchestrator",
		}},
		{"schema of a string", def("stringy", `{"type":"string"}`, "def execute(args):\n    return \"x\"\n"), []string{
			`: tool stringy: input schema: "type" is "string", want "object"`,
		}},
		{"misspelled field", `{"name":"typo","label":"L","descripton":"x","input_schema":{"type":"object"},"code":"def execute(args):\n  return 'x'\n"}`, []string{
			": not a tool definition as write_tool takes it: ",
			"descripton",
		}},
		{"not JSON", "{\n  \"name\": \"x\",\n  \"label\": 'L'\n}", []string{
			": line 3, column 13: not JSON: invalid character '\\'' looking for beginning of value",
		}},
		{"not an object", `["x"]`, []string{": not a tool definition: want a JSON object, got an array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, "def.json", tt.file)
			stdout, _, err := run(t, url, "tools", "import", file)
			if err == nil || stdout != "" {
				t.Fatalf("err = %v, stdout %q", err, stdout)
			}
			if !strings.HasPrefix(err.Error(), "agentctl tools import: "+file+": ") {
				t.Errorf("err = %v, want it to name the file", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to hold %q", err, w)
				}
			}
		})
	}
	// Nothing was stored.
	_, _, err := run(t, url, "--timeout", "10s", "tools", "history", "broken")
	if err == nil || !strings.Contains(err.Error(), "there is no scripted tool named broken") {
		t.Errorf("history of a refused tool: err = %v", err)
	}
	// A built-in tool is not stored, and cannot be deleted.
	_, _, err = run(t, url, "tools", "delete", "calculator")
	if err == nil || !strings.Contains(err.Error(), "tool calculator is not a scripted tool (it is served by 1 worker)") {
		t.Errorf("delete calculator: err = %v", err)
	}
}
