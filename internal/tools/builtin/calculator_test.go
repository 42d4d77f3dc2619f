package builtin

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCalculatorValues(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		// Precedence.
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"2 * 3 ^ 2", "18"},
		{"10 - 4 / 2", "8"},
		{"7 % 4 + 1", "4"},
		{"1 + 2 * 3 ^ 2 / 6 - 1", "3"},
		// Associativity.
		{"10 - 4 - 3", "3"},
		{"100 / 10 / 5", "2"},
		{"2 ^ 3 ^ 2", "512"},
		{"(2 ^ 3) ^ 2", "64"},
		{"17 % 5 % 3", "2"},
		// Unary signs.
		{"-2 ^ 2", "-4"},
		{"(-2) ^ 2", "4"},
		{"2 ^ -1", "0.5"},
		{"-2 ^ -2", "-0.25"},
		{"--3", "3"},
		{"+3", "3"},
		{"2 * -3", "-6"},
		{"1 - -1", "2"},
		{"-(1 + 2)", "-3"},
		{"-0", "0"},
		{"0 * -1", "0"},
		// Numbers.
		{"3.5 + 1.25", "4.75"},
		{".5 * 4", "2"},
		{"5. + 1", "6"},
		{"1e3", "1000"},
		{"2.5E-1", "0.25"},
		{"1e+2 / 4", "25"},
		{"0.1 + 0.2", "0.30000000000000004"},
		{"1 / 3", "0.3333333333333333"},
		{"-7 % 3", "-1"},
		{"5.5 % 2", "1.5"},
		// Integers print as integers up to 2^53, then in 'g' form.
		{"2 ^ 53", "9007199254740992"},
		{"-(2 ^ 53)", "-9007199254740992"},
		{"2 ^ 53 * 2", "1.8014398509481984e+16"},
		{"1e-400", "0"},
		// Whitespace.
		{"\t 1\n+\r2 ", "3"},
		{"((((1))))", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			res, err := run(context.Background(), t, Calculator(), map[string]any{"expression": tt.expr})
			if err != nil {
				t.Fatalf("calculator(%q): %v", tt.expr, err)
			}
			if got, want := text(res), tt.want; got != want {
				t.Errorf("calculator(%q) = %s, want %s", tt.expr, got, want)
			}
			v, ok := res.Details["value"].(float64)
			if !ok {
				t.Fatalf("details value = %#v, want a float64", res.Details["value"])
			}
			if got, want := formatNumber(v), tt.want; got != want {
				t.Errorf("details value %v formats as %s, want %s", v, got, want)
			}
		})
	}
}

func TestCalculatorErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{"(1 + 2))", `calculator: unexpected ")" at column 8`},
		{"1 + 2)", `calculator: unexpected ")" at column 6`},
		{"(1 + )", `calculator: unexpected ")" at column 6`},
		{"1 / 0", `calculator: division by zero at column 3`},
		{"1 + 4 / (2 - 2)", `calculator: division by zero at column 7`},
		{"5 % 0", `calculator: modulo by zero at column 3`},
		{"0 ^ -1", `calculator: division by zero at column 3 (zero to a negative power)`},
		{"1 +", `calculator: unexpected end of expression`},
		{"-", `calculator: unexpected end of expression`},
		{"2 ^", `calculator: unexpected end of expression`},
		{"(1 + 2", `calculator: missing ")" to close "(" at column 1`},
		{"2 * ((3)", `calculator: missing ")" to close "(" at column 5`},
		{"", `calculator: empty expression`},
		{"   ", `calculator: empty expression`},
		{"2 3", `calculator: unexpected "3" at column 3`},
		{"2 34.5", `calculator: unexpected "34.5" at column 3`},
		{"2(3)", `calculator: unexpected "(" at column 2`},
		{"sqrt(4)", `calculator: unexpected "sqrt" at column 1`},
		{"1 + x", `calculator: unexpected "x" at column 5`},
		{"2 ** 3", `calculator: unexpected "*" at column 4`},
		{"1.2.3", `calculator: unexpected ".3" at column 4`},
		{"2e", `calculator: unexpected "e" at column 2`},
		{"0x10", `calculator: unexpected "x10" at column 2`},
		{"1_000", `calculator: unexpected "_000" at column 2`},
		{"é + 1", `calculator: unexpected "é" at column 1`},
		{"1 + é", `calculator: unexpected "é" at column 5`},
		{"\"1\"", `calculator: unexpected "\"" at column 1`},
		{"1 + \xff", `calculator: unexpected "\xff" at column 5`},
		{".", `calculator: unexpected "." at column 1`},
		{"1e400", `calculator: number "1e400" at column 1 is too large`},
		{"10 ^ 400", `calculator: result of "^" at column 4 is too large`},
		{"1e308 * 10", `calculator: result of "*" at column 7 is too large`},
		{"(-8) ^ 0.5", `calculator: "^" at column 6 has no real result`},
		{"inf", `calculator: unexpected "inf" at column 1`},
		{"NaN", `calculator: unexpected "NaN" at column 1`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			res, err := run(context.Background(), t, Calculator(), map[string]any{"expression": tt.expr})
			if err == nil {
				t.Fatalf("calculator(%q) = %s, want error %q", tt.expr, text(res), tt.want)
			}
			if got, want := err.Error(), tt.want; got != want {
				t.Errorf("calculator(%q) error = %s, want %s", tt.expr, got, want)
			}
		})
	}
}

func TestCalculatorLimits(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // error text; empty for success
	}{
		{"longest", "1" + strings.Repeat("+1", (MaxExpressionLength-1)/2), ""},
		{"too long", strings.Repeat("1", MaxExpressionLength+1), "calculator: expression is 1001 characters long, the limit is 1000"},
		{"too long in characters", strings.Repeat("é", MaxExpressionLength+1), "calculator: expression is 1001 characters long, the limit is 1000"},
		{"deepest parentheses", strings.Repeat("(", MaxExpressionDepth) + "1" + strings.Repeat(")", MaxExpressionDepth), ""},
		{"parentheses too deep", strings.Repeat("(", MaxExpressionDepth+1) + "1" + strings.Repeat(")", MaxExpressionDepth+1),
			"calculator: expression nested deeper than 100 levels at column 101"},
		{"signs too deep", strings.Repeat("-", MaxExpressionDepth+1) + "1",
			"calculator: expression nested deeper than 100 levels at column 101"},
		{"powers too deep", strings.Repeat("1^", MaxExpressionDepth+1) + "1",
			"calculator: expression nested deeper than 100 levels at column 202"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := evaluate(tt.expr)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("evaluate: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("evaluate succeeded, want error %q", tt.want)
			case tt.want != "":
				if got, want := err.Error(), tt.want; got != want {
					t.Errorf("error = %s, want %s", got, want)
				}
			}
		})
	}
}

func TestCalculatorArguments(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing", map[string]any{}, `calculator: missing required argument "expression"`},
		{"not a string", map[string]any{"expression": 12.0}, `calculator: argument "expression" must be a string, got a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(context.Background(), t, Calculator(), tt.args)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestCalculatorCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := run(ctx, t, Calculator(), map[string]any{"expression": "1+1"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func FuzzCalculator(f *testing.F) {
	for _, seed := range []string{
		"1 + 2 * 3", "(1 + 2) * 3", "-2 ^ 2", "2 ^ 3 ^ 2", "1 / 0", "5 % 0",
		"1e3", ".5", "5.", "1e400", "2e", "((((1))))", "(1 + 2", "1 + 2)",
		"sqrt(4)", "é", "\xff", "", "   ", "0 ^ -1", "(-8) ^ 0.5", "1e308 * 10",
		strings.Repeat("(", 200), strings.Repeat("-", 200) + "1", "2^-2^-2",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "calculator: ") {
				t.Errorf("evaluate(%q) error %q lacks the calculator: prefix", expr, err)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("evaluate(%q) = %v, want a finite number or an error", expr, v)
		}
		if s := formatNumber(v); s == "" {
			t.Errorf("formatNumber(%v) is empty", v)
		}
	})
}
