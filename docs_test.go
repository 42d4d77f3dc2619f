package agentfleet_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// docs are the repository's Markdown files, whose relative links and
// anchors TestDocLinks checks.
var docs = []string{
	"README.md",
	"BENCHMARKS.md",
	"docs/DESIGN.md",
	"docs/PROTOCOL.md",
	"docs/OPERATIONS.md",
	"docs/GUIDE.md",
	"docs/BENCHMARK-METHODS.md",
	"docs/BENCHMARK-HISTORY.md",
	"docs/BENCHMARK-FEATURES.md",
	"deploy/README.md",
	"deploy/nats/README.md",
	"examples/node-worker/README.md",
}

// TestDocLengths holds the README to a quick start and a map, and the
// benchmarks to current results with a short history: depth goes to docs/.
func TestDocLengths(t *testing.T) {
	for _, c := range []struct {
		file string
		max  int
	}{
		{"README.md", 300},
		{"BENCHMARKS.md", 500},
	} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(data), "\n"); got > c.max {
			t.Errorf("%s has %d lines, more than %d: move the detail to docs/", c.file, got, c.max)
		}
	}
}

// mdLink is an inline Markdown link or image: its target, without a title.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks checks that every relative link of the docs names a file of
// the repository and that every anchor names a heading of its file.
func TestDocLinks(t *testing.T) {
	anchors := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a, err := headingAnchors(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
		}
		anchors[path] = a
		return a
	}
	for _, doc := range docs {
		lines, err := proseLines(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s:%d: link %q: no such file %s", doc, l.n, target, path)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					t.Errorf("%s:%d: link %q: an anchor in a file that is not Markdown", doc, l.n, target)
					continue
				}
				if !anchorsOf(filepath.Clean(path))[anchor] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", doc, l.n, target, path, anchor)
				}
			}
		}
	}
}

// line is a line of a Markdown file, numbered from 1.
type line struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown file outside fenced code
// blocks, where a link is a link.
func proseLines(path string) ([]line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []line
	fenced := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(text), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line{n, text})
		}
	}
	return out, sc.Err()
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, blanks as '-', and a
// repeated anchor numbered -1, -2, ...
func headingAnchors(path string) (map[string]bool, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range lines {
		if !strings.HasPrefix(l.text, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(l.text, "#"))
		a := slug(title)
		if k := seen[a]; k > 0 {
			anchors[a+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}

// slug is GitHub's anchor of a heading's text.
func slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestSlug checks the anchors against GitHub's for headings of these docs.
func TestSlug(t *testing.T) {
	for _, c := range []struct{ title, want string }{
		{"Log in", "log-in"},
		{"Dispatch: keeping work off saturated workers", "dispatch-keeping-work-off-saturated-workers"},
		{"`GET /api/events`: the events as Server-Sent Events", "get-apievents-the-events-as-server-sent-events"},
		{"1. Deploy to Kubernetes", "1-deploy-to-kubernetes"},
		{"Security: who may do what", "security-who-may-do-what"},
	} {
		if got := slug(c.title); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.title, got, c.want)
		}
	}
}

// TestDesignPackageTable checks docs/DESIGN.md's package table against go
// list: every package of the module has a row, its own or a parent
// directory's (`cmd/*` stands for every command), and every row names
// packages that exist.
func TestDesignPackageTable(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/agentfleet/agentfleet"
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		p = strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if p == "" {
			p = "agentfleet" // the root package, as the table names it
		}
		pkgs = append(pkgs, p)
	}
	rows, err := packageRows("docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal(`docs/DESIGN.md has no table headed "| package | role | imports |"`)
	}
	for _, p := range pkgs {
		if !slices.ContainsFunc(rows, func(r string) bool { return covers(r, p) }) {
			t.Errorf("docs/DESIGN.md's package table has no row for %s", p)
		}
	}
	for _, r := range rows {
		if !slices.ContainsFunc(pkgs, func(p string) bool { return covers(r, p) }) {
			t.Errorf("docs/DESIGN.md's package table has a row for %s, which go list does not list", r)
		}
	}
}

// packageRows returns the packages named, in backquotes, in the first cell
// of each row of a Markdown file's package table.
func packageRows(path string) ([]string, error) {
	lines, err := proseLines(path)
	if err != nil {
		return nil, err
	}
	var rows []string
	in := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l.text, "| package | role | imports |"):
			in = true
		case in && strings.HasPrefix(l.text, "|---"):
		case in && strings.HasPrefix(l.text, "| "):
			cell, _, _ := strings.Cut(strings.TrimPrefix(l.text, "| "), " |")
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cell, -1) {
				rows = append(rows, m[1])
			}
		default:
			in = false
		}
	}
	return rows, nil
}

// covers reports whether a table row naming row stands for package p: the
// package itself, one under it, or, for a row ending in "/*", any package
// under its parent.
func covers(row, p string) bool {
	if parent, ok := strings.CutSuffix(row, "/*"); ok {
		return strings.HasPrefix(p, parent+"/")
	}
	return p == row || strings.HasPrefix(p, row+"/")
}
