package script

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The hidden builtins of the rewrite (see package rewrite): each computes the
// size of what the operation will make, charges it, and then does what the
// interpreter would have done.

// ptrBytes is the size of a slot of a list or tuple that holds an element
// made before (an interface value).
const ptrBytes = 16

var opTokens = map[string]syntax.Token{
	"+": syntax.PLUS, "*": syntax.STAR, "%": syntax.PERCENT, "|": syntax.PIPE, "<<": syntax.LTLT,
	"-": syntax.MINUS, "/": syntax.SLASH, "//": syntax.SLASHSLASH, "&": syntax.AMP, "^": syntax.CIRCUMFLEX, ">>": syntax.GTGT,
}

func hiddenOp(args starlark.Tuple, n int) (syntax.Token, error) {
	if len(args) != n {
		return 0, errors.New("internal: wrong arguments")
	}
	s, _ := args[0].(starlark.String)
	op, ok := opTokens[string(s)]
	if !ok {
		return 0, fmt.Errorf("internal: unknown operator %q", s)
	}
	return op, nil
}

// binaryBuiltin is $binary("op", x, y).
func binaryBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, err := hiddenOp(args, 3)
	if err != nil {
		return nil, err
	}
	return boundedBinary(thread, op, args[1], args[2])
}

func boundedBinary(thread *starlark.Thread, op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	if err := checkBinary(thread, op, x, y); err != nil {
		return nil, err
	}
	return starlark.Binary(op, x, y)
}

// checkBinary charges the result of x op y, or fails when it is too large.
func checkBinary(thread *starlark.Thread, op syntax.Token, x, y starlark.Value) error {
	what := func(kind string) func() string {
		return func() string { return fmt.Sprintf("%s (%s %s %s)", kind, describe(x), op, describe(y)) }
	}
	switch op {
	case syntax.PLUS:
		if n := seqBytes(x); n >= 0 && sameKind(x, y) {
			err := charge(thread, addSize(n, seqBytes(y)), what("concatenation"))
			var me *memError
			if errors.As(err, &me) && n > 16*seqBytes(y) {
				// Most likely s += piece in a loop, which copies
				// the whole string every time.
				me.what += `; the budget counts every intermediate value, so build long strings with "".join(parts)`
			}
			return err
		}
	case syntax.STAR:
		if xi, ok := x.(starlark.Int); ok {
			if yi, ok := y.(starlark.Int); ok {
				return checkIntBits(thread, intBits(xi)+intBits(yi), what("integer multiplication"))
			}
			x, y = y, x // n * seq
		}
		n, ok := y.(starlark.Int)
		if !ok {
			return nil
		}
		per := seqBytes(x)
		if per < 0 {
			return nil
		}
		times, ok := n.Int64()
		if !ok {
			return charge(thread, -1, what(repetitionKind(x)))
		}
		if times <= 0 {
			return nil
		}
		return charge(thread, mulSize(per, times), what(repetitionKind(x)))
	case syntax.PERCENT:
		f, ok := x.(starlark.String)
		if !ok {
			return nil
		}
		return chargeFormat(thread, "string formatting (%)", string(f), strings.Count(string(f), "%"), y)
	case syntax.PIPE:
		xl, yl := starlark.Len(x), starlark.Len(y)
		if _, ok := x.(starlark.Int); ok || xl < 0 || yl < 0 {
			return nil
		}
		return charge(thread, mulSize(int64(xl+yl), entryBytes), what("union"))
	case syntax.LTLT:
		xi, ok1 := x.(starlark.Int)
		yi, ok2 := y.(starlark.Int)
		if !ok1 || !ok2 {
			return nil
		}
		if s, ok := yi.Int64(); ok && s >= 0 && s < maxIntBits {
			return checkIntBits(thread, intBits(xi)+int(s), what("left shift"))
		}
	}
	return nil
}

// checkIntBits bounds the size of an integer result; see maxIntBits.
func checkIntBits(thread *starlark.Thread, bits int, what func() string) error {
	if bits > maxIntBits {
		return fmt.Errorf("%s would make an integer of about %d bits; the limit is %d bits", what(), bits, maxIntBits)
	}
	return charge(thread, int64(bits/8), what)
}

func repetitionKind(v starlark.Value) string {
	return map[string]string{"string": "string repetition", "bytes": "bytes repetition", "list": "list repetition", "tuple": "tuple repetition"}[v.Type()]
}

// seqBytes is the size of the data of a string, bytes, list or tuple, -1
// for other values.
func seqBytes(v starlark.Value) int64 {
	switch v := v.(type) {
	case starlark.String:
		return int64(len(v))
	case starlark.Bytes:
		return int64(len(v))
	case *starlark.List:
		return int64(v.Len()) * ptrBytes
	case starlark.Tuple:
		return int64(len(v)) * ptrBytes
	}
	return -1
}

func sameKind(x, y starlark.Value) bool { return x.Type() == y.Type() }

// chargeFormat charges a formatting of format with args, where format has
// fields conversions: the format, plus the text of each argument as many
// times as a conversion can refer to it (a tuple's elements once each,
// another value once, the values of a dict as often as there are fields).
func chargeFormat(thread *starlark.Thread, op, format string, fields int, args starlark.Value) error {
	st := stateOf(thread)
	if st == nil {
		return nil
	}
	left := st.env.MaxMemory - st.mem
	var n int64
	switch a := args.(type) {
	case starlark.Tuple:
		for _, e := range a {
			m, err := textSize(thread, e, left)
			if err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
			if n = addSize(n, m); n < 0 || n > left {
				break
			}
		}
	case *starlark.Dict, *starlark.List:
		// A dict's values may each be named by many fields; a list
		// (of format's positional arguments) too.
		var most int64
		var walkErr error
		each := func(v starlark.Value) bool {
			m, err := textSize(thread, v, left)
			if err != nil {
				walkErr = err
				return false
			}
			most = max(most, m)
			return most <= left
		}
		if d, ok := a.(*starlark.Dict); ok {
			for _, v := range d.Entries() {
				if !each(v) {
					break
				}
			}
		} else {
			for v := range starlark.Elements(a.(*starlark.List)) {
				if !each(v) {
					break
				}
			}
		}
		if walkErr != nil {
			return fmt.Errorf("%s: %w", op, walkErr)
		}
		n = mulSize(most, int64(max(fields, 1)))
	default:
		m, err := textSize(thread, a, left)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		n = m
	}
	return charge(thread, addSize(int64(len(format)), n), func() string {
		return fmt.Sprintf("%s of %s with %s", op, describe(starlark.String(format)), describe(args))
	})
}

// inplaceBuiltin is $inplace("op", x, y), the value of x op= y. Like the
// interpreter, += extends a list in place and |= updates a dict in place.
func inplaceBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, err := hiddenOp(args, 3)
	if err != nil {
		return nil, err
	}
	return boundedInplace(thread, op, args[1], args[2])
}

func boundedInplace(thread *starlark.Thread, op syntax.Token, x, y starlark.Value) (starlark.Value, error) {
	switch op {
	case syntax.PLUS:
		if xl, ok := x.(*starlark.List); ok {
			if _, ok := y.(starlark.Iterable); ok {
				if err := listExtend(thread, xl, y, "+="); err != nil {
					return nil, err
				}
				return xl, nil
			}
		}
	case syntax.PIPE:
		if xd, ok := x.(*starlark.Dict); ok {
			if yd, ok := y.(*starlark.Dict); ok {
				if err := charge(thread, int64(yd.Len())*entryBytes, func() string {
					return fmt.Sprintf("union (%s |= %s)", describe(x), describe(y))
				}); err != nil {
					return nil, err
				}
				for k, v := range yd.Entries() {
					if err := xd.SetKey(k, v); err != nil {
						return nil, fmt.Errorf("cannot apply |= to %s: %w", describe(x), err)
					}
				}
				return xd, nil
			}
		}
	}
	return boundedBinary(thread, op, x, y)
}

// listExtend appends the elements of y to l, as l += y and l.extend(y) do:
// it charges them, then lets the list's own extend do it (which copies a
// list extended by itself first). An iterable of unknown length is
// materialised first, counted as it goes.
func listExtend(thread *starlark.Thread, l *starlark.List, y starlark.Value, op string) error {
	if _, ok := y.(starlark.Iterable); !ok {
		return fmt.Errorf("%s: got %s, want iterable", op, y.Type())
	}
	n := starlark.Len(y)
	if n < 0 {
		m, err := materialize(thread, "list extension", y, slotBytes)
		if err != nil {
			return err
		}
		y = m
	} else if err := charge(thread, mulSize(int64(n), slotBytes), func() string {
		return fmt.Sprintf("list extension (%s %s %s)", describe(l), op, describe(y))
	}); err != nil {
		return err
	}
	extend, err := l.Attr("extend")
	if err != nil {
		return err
	}
	if _, err := starlark.Call(thread, extend, starlark.Tuple{y}, nil); err != nil {
		return fmt.Errorf("cannot apply %s to %s: %w", op, describe(l), err)
	}
	return nil
}

// augIndexBuiltin is $augindex("op", x, k, y): x[k] op= y.
func augIndexBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	op, err := hiddenOp(args, 4)
	if err != nil {
		return nil, err
	}
	x, k, y := args[1], args[2], args[3]
	v, err := getIndex(x, k)
	if err != nil {
		return nil, err
	}
	z, err := boundedInplace(thread, op, v, y)
	if err != nil {
		return nil, err
	}
	return starlark.None, setIndex(x, k, z)
}

// setIndexBuiltin is $setindex(x, k, v): x[k] = v, which charges a new
// entry of a dict.
func setIndexBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 3 {
		return nil, errors.New("internal: wrong arguments")
	}
	x, k, v := args[0], args[1], args[2]
	if d, ok := x.(*starlark.Dict); ok {
		if _, found, err := d.Get(k); err == nil && !found && !fits(thread, entryBytes) {
			if err := charge(thread, entryBytes, func() string { return fmt.Sprintf("a new entry of %s", describe(d)) }); err != nil {
				return nil, err
			}
		}
	}
	return starlark.None, setIndex(x, k, v)
}

// growBuiltin is $grow(v): one more element of a comprehension.
func growBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 1 {
		return nil, errors.New("internal: wrong arguments")
	}
	if !fits(thread, slotBytes) {
		return nil, charge(thread, slotBytes, func() string { return "the elements of a comprehension" })
	}
	return args[0], nil
}

// getIndex is x[k], with the interpreter's errors.
func getIndex(x, k starlark.Value) (starlark.Value, error) {
	switch x := x.(type) {
	case starlark.Mapping:
		v, found, err := x.Get(k)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("key %v not in %s", k, x.Type())
		}
		return v, nil
	case starlark.Indexable:
		i, err := index(x, k)
		if err != nil {
			return nil, err
		}
		return x.Index(i), nil
	}
	return nil, fmt.Errorf("unhandled index operation %s[%s]", x.Type(), k.Type())
}

// setIndex is x[k] = v, with the interpreter's errors.
func setIndex(x, k, v starlark.Value) error {
	switch x := x.(type) {
	case starlark.HasSetKey:
		return x.SetKey(k, v)
	case starlark.HasSetIndex:
		i, err := index(x, k)
		if err != nil {
			return err
		}
		return x.SetIndex(i, v)
	}
	return fmt.Errorf("%s value does not support item assignment", x.Type())
}

func index(x starlark.Indexable, k starlark.Value) (int, error) {
	n := x.Len()
	i, err := starlark.AsInt32(k)
	if err != nil {
		return 0, fmt.Errorf("%s index: %s", x.Type(), err)
	}
	orig := i
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return 0, fmt.Errorf("%s index %d out of range [%d:%d]", x.Type(), orig, -n, n-1)
	}
	return i, nil
}
