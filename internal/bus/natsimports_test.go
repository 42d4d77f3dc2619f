package bus_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// natsClientUsers are the packages, besides those under internal/bus and
// cmd, whose non-test files may import the NATS client: the fault-injection
// harness, which cuts and restores connections itself, its ledger
// worker, which stores each execution in a stream of its own, and its
// observers of the partitions' owners and the runs' events.
var natsClientUsers = []string{"internal/chaos", "internal/chaos/ledger", "internal/chaos/observe"}

// TestNATSClientOnlyWhereNATSIsTheTransport: outside tests, nats.go (and
// its jetstream and micro packages) is imported only by the packages under
// internal/bus, by cmd/... and by natsClientUsers.
func TestNATSClientOnlyWhereNATSIsTheTransport(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	allowed := func(dir string) bool {
		return dir == "internal/bus" || strings.HasPrefix(dir, "internal/bus/") ||
			strings.HasPrefix(dir, "cmd/") || slices.Contains(natsClientUsers, dir)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if (p == "github.com/nats-io/nats.go" || strings.HasPrefix(p, "github.com/nats-io/nats.go/")) && !allowed(rel) {
				t.Errorf("%s/%s imports %s: only internal/bus/..., cmd/... and %v may", rel, name, p, natsClientUsers)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go files found under the module root")
	}
}
