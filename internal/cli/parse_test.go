package cli

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestParseBadFlagIsOneLine parses bad flags: each is one line naming the
// flag and pointing at --help, with nothing printed; --help prints the
// usage.
func TestParseBadFlagIsOneLine(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"--nosuch", "flag provided but not defined: -nosuch (prog --help lists the flags)"},
		{"--n x", `invalid value "x" for flag -n: parse error (prog --help lists the flags)`},
		{"--n", "flag needs an argument: -n (prog --help lists the flags)"},
	} {
		var out strings.Builder
		fs := flag.NewFlagSet("prog", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.Int("n", 0, "a number")
		err := Parse(fs, strings.Fields(tt.args))
		if err == nil || err.Error() != tt.want || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: err = %v, want %q", tt.args, err, tt.want)
		}
		if out.Len() != 0 {
			t.Errorf("%s: printed %q, want nothing", tt.args, out.String())
		}
	}
	var out strings.Builder
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.Int("n", 0, "a number")
	if err := Parse(fs, []string{"--help"}); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "a number") {
		t.Errorf("--help: err %v, printed %q; want flag.ErrHelp and the usage", err, out.String())
	}
}
