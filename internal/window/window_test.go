package window_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/window"
)

func TestPolicyBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		p      window.Policy
		fixed  int
		budget int
	}{
		{"unknown window", window.Policy{}, 10, 0},
		{"default reserve of a large window", window.Policy{Window: 100000}, 1000, 100000 - window.DefaultReserveOutput - 1000},
		{"default reserve of a small window", window.Policy{Window: 8000}, 0, 6000},
		{"reserve set", window.Policy{Window: 8000, ReserveOutput: 1000}, 500, 6500},
		{"fixed fills it", window.Policy{Window: 8000, ReserveOutput: 1000}, 9000, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.Budget(c.fixed); got != c.budget {
				t.Errorf("Budget(%d) = %d, want %d", c.fixed, got, c.budget)
			}
		})
	}
}

// TestPolicyFit fits a history of about 12 thousand tokens: whole when the
// window is unknown or large enough, truncated to the window otherwise, and
// to half of a refused request when the model refused one.
func TestPolicyFit(t *testing.T) {
	hist := append(history(20, 400), agentfleet.NewUserMessage("now"))
	runStart := len(hist) - 1
	all := new(window.Estimator).Tokens(window.MessagesBytes(hist))
	for _, c := range []struct {
		name    string
		p       window.Policy
		refused int
		// maxAfter bounds the tokens kept; 0: the history is kept whole.
		maxAfter int
	}{
		{"unknown window", window.Policy{}, 0, 0},
		{"large window", window.Policy{Window: 4 * all, MaxToolResultBytes: -1}, 0, 0},
		{"small window", window.Policy{Window: 4000, ReserveOutput: 1000}, 0, 3000},
		{"refused, window unknown", window.Policy{}, all, all / 2},
		{"refused below the window", window.Policy{Window: 8000, ReserveOutput: 1000}, 6000, 3000},
	} {
		t.Run(c.name, func(t *testing.T) {
			msgs, comp := c.p.Fit(window.FitInput{Messages: hist, RunStart: runStart, FixedBytes: 100, Refused: c.refused})
			if c.maxAfter == 0 {
				if comp != nil || len(msgs) != len(hist) {
					t.Fatalf("kept %d of %d messages, compaction %+v; want the history whole", len(msgs), len(hist), comp)
				}
				return
			}
			if comp == nil {
				t.Fatalf("nothing left out of %d tokens, want at most %d kept", all, c.maxAfter)
			}
			checkPairs(t, msgs)
			if comp.Strategy != window.StrategyTruncate || comp.TokensAfter > c.maxAfter || comp.TokensBefore != all ||
				comp.DroppedMessages != len(hist)-len(msgs) || comp.DroppedTurns == 0 {
				t.Errorf("compaction %+v of %d tokens, want a truncation to at most %d", comp, all, c.maxAfter)
			}
			if last := msgs[len(msgs)-1]; last != hist[runStart] {
				t.Errorf("the current run's message was left out")
			}
		})
	}
}

// TestImports holds the package to what its doc comment says it may
// import: the domain types and the standard library.
func TestImports(t *testing.T) {
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
			if path != "github.com/agentfleet/agentfleet" && strings.Contains(first, ".") {
				t.Errorf("%s imports %s; window may import only the root agentfleet package and the standard library", f, path)
			}
		}
	}
}
