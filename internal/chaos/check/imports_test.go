package check

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ioPackages are standard packages that reach the world outside the
// process, or its clock and randomness, which the checker must not.
var ioPackages = map[string]bool{
	"os": true, "os/exec": true, "os/signal": true, "io": true, "io/fs": true, "io/ioutil": true,
	"net": true, "net/http": true, "syscall": true, "log": true, "log/slog": true,
	"math/rand": true, "math/rand/v2": true, "crypto/rand": true, "context": true,
}

// allowedModule are the packages of this module the checker may import.
var allowedModule = map[string]bool{
	"github.com/agentfleet/agentfleet":                      true,
	"github.com/agentfleet/agentfleet/internal/chaos/model": true,
}

// TestNoIO holds the package to its doc comment: its code imports no I/O
// package of the standard library, nothing outside it but the root types
// and the model, and never reads the clock, so that a check depends on its
// inputs alone.
func TestNoIO(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if ioPackages[path] || (strings.Contains(first, ".") && !allowedModule[path]) {
				t.Errorf("%s imports %q: the checker does no I/O and imports only the root types and the model", fset.Position(imp.Pos()), path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && (sel.Sel.Name == "Now" || sel.Sel.Name == "Since" || sel.Sel.Name == "Until") {
					t.Errorf("%s reads the clock (time.%s): times come in with the records", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}
