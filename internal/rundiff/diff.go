package rundiff

import (
	"fmt"
	"strings"

	"github.com/agentfleet/agentfleet"
)

// Row is one line of a Diff: what it shows (Label), the value of each run,
// and whether they are the same.
type Row struct {
	Label string `json:"label"`
	A     string `json:"a"`
	B     string `json:"b"`
	Same  bool   `json:"same"`
}

// Diff is two runs side by side: both runs, and the rows that align them.
type Diff struct {
	A    Run   `json:"a"`
	B    Run   `json:"b"`
	Rows []Row `json:"rows"`
}

// Compare aligns runs a and b: where each is (session, run), its model and
// user message, then their steps one beside the other in order (step i of
// a beside step i of b, "-" where a run has fewer), then the answer, the
// stop reason, the tokens and the cost.
func Compare(a, b Run) Diff {
	d := Diff{A: a, B: b, Rows: []Row{}}
	add := func(label, x, y string) {
		d.Rows = append(d.Rows, Row{Label: label, A: x, B: y, Same: x == y})
	}
	add("session", a.Session, b.Session)
	add("run", a.RunID, b.RunID)
	add("model", a.Model, b.Model)
	add("user", a.User, b.User)
	for i := range max(len(a.Steps), len(b.Steps)) {
		x, kx := stepAt(a.Steps, i)
		y, ky := stepAt(b.Steps, i)
		kind := kx
		switch {
		case kx == "":
			kind = ky
		case ky != "" && ky != kx:
			kind = kx + "/" + ky
		}
		add(fmt.Sprintf("%d %s", i+1, kind), x, y)
	}
	add("answer", a.Answer, b.Answer)
	add("stop", a.StopReason, b.StopReason)
	add("tokens", Tokens(a.Usage), Tokens(b.Usage))
	add("cost", USD(a.Cost()), USD(b.Cost()))
	return d
}

// Differs counts the rows of d whose values differ, where the runs are
// (session, run) left out.
func (d *Diff) Differs() int {
	n := 0
	for _, r := range d.Rows {
		if !r.Same && r.Label != "session" && r.Label != "run" {
			n++
		}
	}
	return n
}

func stepAt(steps []Step, i int) (text, kind string) {
	if i >= len(steps) {
		return "-", ""
	}
	return StepText(steps[i]), steps[i].Kind
}

// StepText is a step in a line: an assistant message's text, its tool
// calls (→ name args) and tokens; a tool result's tool and text; a user
// message's text; the kind of any other record.
func StepText(s Step) string {
	var parts []string
	switch s.Kind {
	case "assistant":
		if s.Text != "" {
			parts = append(parts, s.Text)
		}
		for _, c := range s.Calls {
			parts = append(parts, "→ "+c.Name+" "+c.Args)
		}
		if s.Usage != nil {
			parts = append(parts, "["+Tokens(s.Usage)+"]")
		}
	case "tool":
		head := s.Tool + ":"
		if s.Error {
			head += " error:"
		}
		parts = append(parts, head, s.Text)
	case "user":
		parts = append(parts, s.Text)
	default:
		parts = append(parts, "("+s.Kind+")")
		if s.Text != "" {
			parts = append(parts, s.Text)
		}
	}
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

// Tokens is a usage's input and output tokens ("-" for none).
func Tokens(u *agentfleet.Usage) string {
	if u == nil {
		return "-"
	}
	if u.InputTokens == 0 && u.OutputTokens == 0 && u.TotalTokens > 0 {
		return fmt.Sprintf("%d total", u.TotalTokens)
	}
	return fmt.Sprintf("%d in, %d out", u.InputTokens, u.OutputTokens)
}

// USD is an amount of US dollars, to the millionth.
func USD(v float64) string { return fmt.Sprintf("$%.6f", v) }
