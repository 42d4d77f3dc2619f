package agentfleet_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The house rules: how large a room may grow, that each package says what
// it holds, and that the tests the design cites exist. They are read from
// `go list` and the files, so that they hold for the code as it is. The
// import rules are internal/bus's TestImportRules and
// TestNATSClientOnlyWhereNATSIsTheTransport; the docs' lengths and links are
// docs_test.go's.

const module = "github.com/agentfleet/agentfleet"

// listedPackage is what the rules need of `go list -json`.
type listedPackage struct {
	ImportPath string
	Dir        string
	Doc        string
	Name       string
	GoFiles    []string
	Imports    []string
	Deps       []string
}

func goList(t *testing.T, patterns ...string) []listedPackage {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", append([]string{"list", "-json"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) string {
	if path == module {
		return "agentfleet"
	}
	return strings.TrimPrefix(path, module+"/")
}

func under(path, dir string) bool {
	r := rel(path)
	return r == dir || strings.HasPrefix(r, dir+"/")
}

// Room sizes: lines of Go outside tests.
const (
	maxPackageLines = 3000
	maxFileLines    = 600
)

// oversize names the packages allowed past maxPackageLines, and why: each
// is a debt, not a design.
var oversize = map[string]string{}

// TestRoomSizes holds every package under internal/ to maxPackageLines of
// code outside tests (but those in oversize), and every Go file outside
// tests to maxFileLines.
func TestRoomSizes(t *testing.T) {
	for _, p := range goList(t, "./...") {
		total := 0
		for _, f := range p.GoFiles {
			n := countLines(t, filepath.Join(p.Dir, f))
			total += n
			if n > maxFileLines {
				t.Errorf("%s/%s has %d lines; a file holds at most %d", rel(p.ImportPath), f, n, maxFileLines)
			}
		}
		if _, debt := oversize[rel(p.ImportPath)]; !debt && under(p.ImportPath, "internal") && total > maxPackageLines {
			t.Errorf("%s has %d lines outside tests; a package under internal/ holds at most %d", rel(p.ImportPath), total, maxPackageLines)
		}
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// TestPackageDocs has every package say its one concern in its doc
// comment.
func TestPackageDocs(t *testing.T) {
	for _, p := range goList(t, "./...") {
		if len(p.GoFiles) == 0 {
			continue
		}
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package doc comment stating its concern", rel(p.ImportPath))
		}
	}
}

// TestCitedTestsExist has every test docs/DESIGN.md cites as proof, in the
// form `package` `TestName`, exist in that package.
func TestCitedTestsExist(t *testing.T) {
	cite := regexp.MustCompile("`((?:internal|cmd)/[a-z0-9/_-]+)` `((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]+)")
	f, err := os.Open(filepath.Join("docs", "DESIGN.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	funcs := map[string]map[string]bool{} // package dir -> test functions
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		for _, m := range cite.FindAllStringSubmatch(sc.Text(), -1) {
			dir, name := m[1], m[2]
			if funcs[dir] == nil {
				funcs[dir] = testFuncs(t, dir)
			}
			if !funcs[dir][name] {
				t.Errorf("docs/DESIGN.md:%d cites %s %s, which does not exist", line, dir, name)
			}
		}
	}
}

var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Za-z0-9_]*)\(`)

func testFuncs(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range testFunc.FindAllSubmatch(b, -1) {
			out[string(m[1])] = true
		}
	}
	return out
}
