package loop_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports holds the package to what its doc comment says it may
// import.
func TestImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/agentfleet/agentfleet":                   true,
		"github.com/agentfleet/agentfleet/internal/pipeline": true,
		"github.com/agentfleet/agentfleet/internal/tools":    true,
		"github.com/agentfleet/agentfleet/internal/tracing":  true,
		"github.com/agentfleet/agentfleet/internal/window":   true,
		"github.com/google/uuid":                             true,
		"go.opentelemetry.io/otel/attribute":                 true,
		"go.opentelemetry.io/otel/codes":                     true,
		"go.opentelemetry.io/otel/trace":                     true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if strings.Contains(first, ".") && !allowed[path] {
				t.Errorf("%s imports %s, which the package comment does not allow", f, path)
			}
		}
	}
}
