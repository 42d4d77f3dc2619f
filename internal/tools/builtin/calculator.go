package builtin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/agentfleet/agentfleet"
)

// Limits of the calculator's input.
const (
	// MaxExpressionLength is the longest expression, in characters, that
	// calculator evaluates.
	MaxExpressionLength = 1000
	// MaxExpressionDepth bounds the nesting of parentheses, unary signs and
	// exponents in one expression.
	MaxExpressionDepth = 100
)

var calculatorSchema = mustSchema(`{
	"type": "object",
	"properties": {
		"expression": {
			"type": "string",
			"description": "Arithmetic expression: numbers (decimals and exponent notation like 1e3 allowed), + - * / % ^ (power), unary minus and parentheses. Example: (2 + 3) * 4^2 / 10",
			"minLength": 1,
			"maxLength": 1000
		}
	},
	"required": ["expression"],
	"additionalProperties": false
}`)

// Calculator returns the calculator tool, which evaluates an arithmetic
// expression given as {"expression": string}.
//
// The grammar has + - * / % and ^ (power), parentheses, unary minus and plus,
// and decimal numbers with optional exponent. ^ binds tighter than unary
// minus and is right-associative, as in mathematics: -2^2 is -4 and 2^3^2 is
// 512. % is the remainder with the sign of the dividend (math.Mod).
// Arithmetic is float64. The result text is an integer when the value is
// integral and at most 2^53 in magnitude, otherwise
// strconv.FormatFloat(v, 'g', -1, 64); the details hold {"value": v}.
//
// Errors give the 1-based column (in characters) where they occur, e.g.
// `calculator: unexpected ")" at column 7` or `calculator: division by zero
// at column 3` (the column of the operator). Expressions longer than
// MaxExpressionLength or nested deeper than MaxExpressionDepth are refused,
// as are results that overflow float64 or are not real numbers.
func Calculator() *agentfleet.Tool {
	return &agentfleet.Tool{
		ToolDef: agentfleet.ToolDef{
			Name:        "calculator",
			Label:       "Calculator",
			Description: "Evaluates an arithmetic expression exactly as written and returns its value. Supports + - * / % ^ (power, right-associative, binds tighter than unary minus), parentheses and decimal numbers. Use it instead of doing arithmetic in your head.",
			InputSchema: calculatorSchema,
			Annotations: agentfleet.Annotations{ReadOnly: true, Idempotent: true},
			Parallel:    true,
		},
		Handler: agentfleet.HandlerFunc(calculate),
	}
}

func calculate(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("calculator: %w", err)
	}
	expr, _, err := stringArg("calculator", call.Arguments, "expression", true)
	if err != nil {
		return nil, err
	}
	v, err := evaluate(expr)
	if err != nil {
		return nil, err
	}
	res := agentfleet.TextResult(formatNumber(v))
	res.Details = map[string]any{"value": v}
	return res, nil
}

// formatNumber writes v as an integer when it is integral and exactly
// representable (|v| <= 2^53), otherwise in the shortest 'g' form.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// evaluate parses and evaluates expr. The result is always finite; -0 is
// returned as 0.
func evaluate(expr string) (float64, error) {
	if n := utf8.RuneCountInString(expr); n > MaxExpressionLength {
		return 0, fmt.Errorf("calculator: expression is %d characters long, the limit is %d", n, MaxExpressionLength)
	}
	p := &parser{src: expr}
	p.skipSpace()
	if p.pos == len(p.src) {
		return 0, errors.New("calculator: empty expression")
	}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	p.skipSpace()
	if p.pos < len(p.src) {
		return 0, p.unexpected()
	}
	if v == 0 {
		v = 0 // turn -0 into 0
	}
	return v, nil
}

// parser is a recursive-descent parser that evaluates as it goes. Its
// grammar, lowest precedence first:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("+" | "-") unary | power
//	power   = primary [ "^" unary ]
//	primary = number | "(" expr ")"
type parser struct {
	src   string
	pos   int // byte offset of the next unread character
	depth int
}

func (p *parser) expr() (float64, error) {
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		p.skipSpace()
		if p.pos == len(p.src) {
			return v, nil
		}
		op := p.src[p.pos]
		if op != '+' && op != '-' {
			return v, nil
		}
		at := p.pos
		p.pos++
		w, err := p.term()
		if err != nil {
			return 0, err
		}
		if v, err = p.apply(op, at, v, w); err != nil {
			return 0, err
		}
	}
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		p.skipSpace()
		if p.pos == len(p.src) {
			return v, nil
		}
		op := p.src[p.pos]
		if op != '*' && op != '/' && op != '%' {
			return v, nil
		}
		at := p.pos
		p.pos++
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		if v, err = p.apply(op, at, v, w); err != nil {
			return 0, err
		}
	}
}

func (p *parser) unary() (float64, error) {
	p.skipSpace()
	if p.pos < len(p.src) && (p.src[p.pos] == '-' || p.src[p.pos] == '+') {
		neg := p.src[p.pos] == '-'
		if err := p.enter(); err != nil {
			return 0, err
		}
		p.pos++
		v, err := p.unary()
		p.depth--
		if err != nil {
			return 0, err
		}
		if neg {
			v = -v
		}
		return v, nil
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	base, err := p.primary()
	if err != nil {
		return 0, err
	}
	p.skipSpace()
	if p.pos == len(p.src) || p.src[p.pos] != '^' {
		return base, nil
	}
	at := p.pos
	if err := p.enter(); err != nil {
		return 0, err
	}
	p.pos++
	// The exponent is a unary, so 2^-1 works and 2^3^2 is 2^(3^2).
	exp, err := p.unary()
	p.depth--
	if err != nil {
		return 0, err
	}
	return p.apply('^', at, base, exp)
}

func (p *parser) primary() (float64, error) {
	p.skipSpace()
	if p.pos == len(p.src) {
		return 0, errors.New("calculator: unexpected end of expression")
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		open := p.pos
		if err := p.enter(); err != nil {
			return 0, err
		}
		p.pos++
		v, err := p.expr()
		p.depth--
		if err != nil {
			return 0, err
		}
		p.skipSpace()
		if p.pos == len(p.src) {
			return 0, fmt.Errorf(`calculator: missing ")" to close "(" at column %d`, p.column(open))
		}
		if p.src[p.pos] != ')' {
			return 0, p.unexpected()
		}
		p.pos++
		return v, nil
	case isDigit(c) || c == '.' && p.pos+1 < len(p.src) && isDigit(p.src[p.pos+1]):
		return p.number()
	default:
		return 0, p.unexpected()
	}
}

// number scans digits [ "." digits ] [ ("e" | "E") [ "+" | "-" ] digits ].
// It scans only these characters, so strconv.ParseFloat never sees the hex,
// underscore, "inf" or "nan" forms it would otherwise accept.
func (p *parser) number() (float64, error) {
	start := p.pos
	p.digits()
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		p.digits()
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		// Take the exponent only when digits follow, so that "2e" reports
		// the "e" rather than a malformed number.
		i := p.pos + 1
		if i < len(p.src) && (p.src[i] == '+' || p.src[i] == '-') {
			i++
		}
		if i < len(p.src) && isDigit(p.src[i]) {
			p.pos = i
			p.digits()
		}
	}
	lit := p.src[start:p.pos]
	v, err := strconv.ParseFloat(lit, 64)
	if math.IsInf(v, 0) {
		return 0, fmt.Errorf("calculator: number %q at column %d is too large", lit, p.column(start))
	}
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		// Unreachable: the scanner admits only well-formed literals.
		return 0, fmt.Errorf("calculator: malformed number %q at column %d", lit, p.column(start))
	}
	return v, nil
}

func (p *parser) digits() {
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
	}
}

// apply computes v op w for the operator at byte offset at.
func (p *parser) apply(op byte, at int, v, w float64) (float64, error) {
	var r float64
	switch op {
	case '+':
		r = v + w
	case '-':
		r = v - w
	case '*':
		r = v * w
	case '/':
		if w == 0 {
			return 0, fmt.Errorf("calculator: division by zero at column %d", p.column(at))
		}
		r = v / w
	case '%':
		if w == 0 {
			return 0, fmt.Errorf("calculator: modulo by zero at column %d", p.column(at))
		}
		r = math.Mod(v, w)
	case '^':
		if v == 0 && w < 0 {
			return 0, fmt.Errorf("calculator: division by zero at column %d (zero to a negative power)", p.column(at))
		}
		r = math.Pow(v, w)
	}
	switch {
	case math.IsNaN(r):
		return 0, fmt.Errorf("calculator: %q at column %d has no real result", string(op), p.column(at))
	case math.IsInf(r, 0):
		return 0, fmt.Errorf("calculator: result of %q at column %d is too large", string(op), p.column(at))
	}
	return r, nil
}

// enter counts one more level of nesting and fails past MaxExpressionDepth.
func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxExpressionDepth {
		return fmt.Errorf("calculator: expression nested deeper than %d levels at column %d", MaxExpressionDepth, p.column(p.pos))
	}
	return nil
}

// unexpected reports the token at p.pos: a whole word for letters (so that
// "sqrt(2)" names "sqrt"), a whole number for digits, else one character.
func (p *parser) unexpected() error {
	if p.pos >= len(p.src) {
		return errors.New("calculator: unexpected end of expression")
	}
	start := p.pos
	end := start
	r, size := utf8.DecodeRuneInString(p.src[start:])
	switch {
	case isDigit(p.src[start]) || p.src[start] == '.':
		q := *p
		q.number()
		end = q.pos
		if end == start {
			end = start + size
		}
	case unicode.IsLetter(r) || r == '_':
		for end < len(p.src) {
			r, size := utf8.DecodeRuneInString(p.src[end:])
			if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' {
				break
			}
			end += size
		}
	default:
		end = start + size
	}
	return fmt.Errorf("calculator: unexpected %q at column %d", p.src[start:end], p.column(start))
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		r, size := utf8.DecodeRuneInString(p.src[p.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		p.pos += size
	}
}

// column converts a byte offset into a 1-based column counted in characters.
func (p *parser) column(off int) int {
	return utf8.RuneCountInString(p.src[:off]) + 1
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
