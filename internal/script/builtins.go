package script

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.starlark.net/starlark"
)

// Bounded versions of Starlark's builtins and of the methods that can
// allocate far beyond their arguments or iterate for long inside one step.
// Each computes what it will make (or counts as it goes, for iterables of
// unknown length), charges it, and then calls the original, so that the
// results and the error messages stay Starlark's own.

// lazyElems is the length beyond which an iterable that holds no elements
// of its own (a range) is charged as if it were materialised by builtins
// that only iterate over it (min, max, any, all): iterating it takes time
// inside one step.
const lazyElems = 1 << 20

// maxIntDigits bounds the string int() parses: decimal conversion of huge
// numbers takes time quadratic in their length (Python has the same
// limit).
const maxIntDigits = 4300

// boundedUniverse are the builtins that shadow Starlark's universe.
var boundedUniverse = func() starlark.StringDict {
	d := starlark.StringDict{}
	for name, per := range map[string]int64{"list": slotBytes, "tuple": slotBytes, "sorted": slotBytes, "reversed": slotBytes,
		"set": entryBytes, "enumerate": slotBytes + 48, "dict": entryBytes} {
		d[name] = materializing(name, per)
	}
	for _, name := range []string{"min", "max", "any", "all"} {
		d[name] = iterating(name)
	}
	d["zip"] = starlark.NewBuiltin("zip", zipBuiltin)
	d["str"] = textual("str")
	d["repr"] = textual("repr")
	d["print"] = starlark.NewBuiltin("print", printBuiltin)
	d["int"] = starlark.NewBuiltin("int", intBuiltin)
	d["getattr"] = starlark.NewBuiltin("getattr", getattrBuiltin)
	return d
}()

func universe(name string) *starlark.Builtin { return starlark.Universe[name].(*starlark.Builtin) }

// materializing wraps a builtin that makes a collection of the elements of
// its first argument: per bytes are charged for each.
func materializing(name string, per int64) *starlark.Builtin {
	orig := universe(name)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) > 0 {
			x := args[0]
			if name == "dict" {
				if _, ok := x.(starlark.Iterable); !ok {
					x = nil
				}
			}
			if x != nil {
				n := starlark.Len(x)
				if name == "dict" {
					n = max(n, 0) + len(kwargs)
				}
				if n >= 0 {
					if err := charge(thread, mulSize(int64(n), per), func() string { return fmt.Sprintf("%s() of %s", name, describe(args[0])) }); err != nil {
						return nil, err
					}
				} else {
					l, err := materialize(thread, name, x, per)
					if err != nil {
						return nil, err
					}
					args = append(starlark.Tuple{l}, args[1:]...)
				}
			}
		} else if name == "dict" && len(kwargs) > 0 {
			if err := charge(thread, int64(len(kwargs))*per, func() string { return "dict()" }); err != nil {
				return nil, err
			}
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

// materialize makes a list of the elements of an iterable of unknown
// length, charging per bytes for each and checking the deadline as it
// goes.
func materialize(thread *starlark.Thread, name string, x starlark.Value, per int64) (*starlark.List, error) {
	it, ok := x.(starlark.Iterable)
	if !ok {
		return nil, fmt.Errorf("%s: got %s, want iterable", name, x.Type())
	}
	var elems []starlark.Value
	for v := range starlark.Elements(it) {
		if err := charge(thread, per, func() string { return fmt.Sprintf("%s() of %s", name, describe(x)) }); err != nil {
			return nil, err
		}
		if elems = append(elems, v); len(elems)%deadlineEvery == 0 {
			if err := checkDeadline(thread); err != nil {
				return nil, err
			}
		}
	}
	return starlark.NewList(elems), nil
}

// iterating wraps a builtin that only iterates over its argument: lazy
// iterables longer than lazyElems are charged as if materialised, since
// they take time inside one step.
func iterating(name string) *starlark.Builtin {
	orig := universe(name)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 1 {
			if err := chargeLazy(thread, name, args[0]); err != nil {
				return nil, err
			}
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

func chargeLazy(thread *starlark.Thread, name string, x starlark.Value) error {
	switch x.(type) {
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set, starlark.String, starlark.Bytes:
		return nil // elements that exist already, bounded by the budget
	}
	if n := starlark.Len(x); n > lazyElems {
		return charge(thread, mulSize(int64(n), slotBytes), func() string { return fmt.Sprintf("%s() of %s", name, describe(x)) })
	}
	return nil
}

func zipBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	n := -1
	for _, a := range args {
		if l := starlark.Len(a); l >= 0 && (n < 0 || l < n) {
			n = l
		}
	}
	if n < 0 && len(args) > 0 {
		// No length known: materialise the first, which bounds the result.
		l, err := materialize(thread, "zip", args[0], slotBytes)
		if err != nil {
			return nil, err
		}
		args = append(starlark.Tuple{l}, args[1:]...)
		n = l.Len()
	}
	per := int64(slotBytes + 24 + ptrBytes*len(args))
	if err := charge(thread, mulSize(int64(max(n, 0)), per), func() string { return fmt.Sprintf("zip() of %d iterables of %d elements", len(args), n) }); err != nil {
		return nil, err
	}
	return starlark.Call(thread, universe("zip"), args, kwargs)
}

// textual wraps str or repr: the text is charged before it is made (str of
// a string is the string itself).
func textual(name string) *starlark.Builtin {
	orig := universe(name)
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		if len(args) == 1 {
			if _, ok := args[0].(starlark.String); !ok || name == "repr" {
				if err := chargeText(thread, name+"()", args[0]); err != nil {
					return nil, err
				}
			}
		}
		return starlark.Call(thread, orig, args, kwargs)
	})
}

func printBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	for _, a := range args {
		if s, ok := a.(starlark.String); ok {
			if err := charge(thread, int64(len(s)), func() string { return "print() of " + describe(a) }); err != nil {
				return nil, err
			}
		} else if err := chargeText(thread, "print()", a); err != nil {
			return nil, err
		}
	}
	return starlark.Call(thread, universe("print"), args, kwargs)
}

func intBuiltin(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) > 0 {
		if s, ok := args[0].(starlark.String); ok && len(s) > maxIntDigits {
			return nil, fmt.Errorf("int: a string of %d characters is longer than the limit of %d digits", len(s), maxIntDigits)
		}
	}
	return starlark.Call(thread, universe("int"), args, kwargs)
}

func getattrBuiltin(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	v, err := starlark.Call(thread, universe("getattr"), args, kwargs)
	if err != nil || len(args) < 2 {
		return v, err
	}
	name, _ := starlark.AsString(args[1])
	return boundMethod(args[0], name, v), nil
}

// attrBuiltin is $attr(x, "name"): x.name, bounded when it is one of the
// methods of rewrite.BoundedMethods.
func attrBuiltin(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 2 {
		return nil, errors.New("internal: wrong arguments")
	}
	x := args[0]
	name, _ := starlark.AsString(args[1])
	ha, ok := x.(starlark.HasAttrs)
	if !ok {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	v, err := ha.Attr(name)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("%s has no .%s field or method", x.Type(), name)
	}
	return boundMethod(x, name, v), nil
}

// methodCheck charges a call of the method name of recv before it runs. It
// may return other arguments to call it with (an iterable of unknown length
// materialised, so that its elements are counted as they are made).
type methodCheck func(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, error)

var methodChecks = map[string]map[string]methodCheck{
	"string": {
		"replace": checkReplace, "join": checkJoin, "format": checkFormat,
		"split": checkSplit, "rsplit": checkSplit, "splitlines": checkSplitlines,
	},
	"list": {
		"append": chargeOne(slotBytes), "insert": chargeOne(slotBytes), "extend": chargeArgs(slotBytes),
	},
	"dict": {
		"setdefault": chargeOne(entryBytes), "update": chargeArgs(entryBytes),
		"items": chargeRecv(slotBytes + 56), "keys": chargeRecv(slotBytes), "values": chargeRecv(slotBytes),
	},
	"set": {
		"add": chargeOne(entryBytes), "update": chargeArgs(entryBytes), "union": chargeRecvAndArgs(entryBytes),
	},
}

// boundMethod returns v, the attribute name of x, or a bounded version of
// it when it is a method that can allocate.
func boundMethod(x starlark.Value, name string, v starlark.Value) starlark.Value {
	check := methodChecks[x.Type()][name]
	b, ok := v.(*starlark.Builtin)
	if check == nil || !ok || b.Receiver() != x {
		return v
	}
	return starlark.NewBuiltin(name, func(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		args, err := check(thread, x, name, args, kwargs)
		if err != nil {
			return nil, err
		}
		return starlark.Call(thread, b, args, kwargs)
	}).BindReceiver(x)
}

func methodWhat(recv starlark.Value, name string) func() string {
	return func() string { return fmt.Sprintf("%s.%s() of %s", recv.Type(), name, describe(recv)) }
}

// chargeOne charges per bytes for the one element the method adds.
func chargeOne(per int64) methodCheck {
	return func(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, _ []starlark.Tuple) (starlark.Tuple, error) {
		if fits(thread, per) {
			return args, nil
		}
		return args, charge(thread, per, methodWhat(recv, name))
	}
}

// chargeArgs charges per bytes for each element of every iterable argument
// and for each keyword argument.
func chargeArgs(per int64) methodCheck {
	return func(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, error) {
		n := int64(len(kwargs))
		for i, a := range args {
			l := starlark.Len(a)
			if _, ok := a.(starlark.Iterable); ok && l < 0 {
				m, err := materialize(thread, recv.Type()+"."+name, a, per)
				if err != nil {
					return nil, err
				}
				args = append(starlark.Tuple(nil), args...)
				args[i] = m
				continue
			}
			n += int64(max(l, 0))
		}
		return args, charge(thread, mulSize(n, per), func() string {
			return fmt.Sprintf("%s.%s() of %s with %d more elements", recv.Type(), name, describe(recv), n)
		})
	}
}

// chargeRecv charges per bytes for each element of the receiver.
func chargeRecv(per int64) methodCheck {
	return func(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, _ []starlark.Tuple) (starlark.Tuple, error) {
		return args, charge(thread, mulSize(int64(starlark.Len(recv)), per), methodWhat(recv, name))
	}
}

func chargeRecvAndArgs(per int64) methodCheck {
	more := chargeArgs(per)
	return func(thread *starlark.Thread, recv starlark.Value, name string, args starlark.Tuple, kw []starlark.Tuple) (starlark.Tuple, error) {
		if err := charge(thread, mulSize(int64(starlark.Len(recv)), per), methodWhat(recv, name)); err != nil {
			return nil, err
		}
		return more(thread, recv, name, args, kw)
	}
}

func checkReplace(thread *starlark.Thread, recv starlark.Value, _ string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, error) {
	var old, new string
	count := -1
	if err := starlark.UnpackPositionalArgs("replace", args, kwargs, 2, &old, &new, &count); err != nil {
		return args, nil // the method itself says what is wrong
	}
	s := string(recv.(starlark.String))
	if len(new) <= len(old) {
		return args, charge(thread, int64(len(s)), methodWhat(recv, "replace"))
	}
	var n int
	if old == "" {
		n = utf8.RuneCountInString(s) + 1
	} else {
		n = strings.Count(s, old)
	}
	if count >= 0 {
		n = min(n, count)
	}
	size := addSize(int64(len(s)), mulSize(int64(n), int64(len(new)-len(old))))
	return args, charge(thread, size, func() string {
		return fmt.Sprintf("string.replace() of %s: %d replacements of %s by %s", describe(recv), n, describe(starlark.String(old)), describe(starlark.String(new)))
	})
}

func checkJoin(thread *starlark.Thread, recv starlark.Value, _ string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, error) {
	if len(args) != 1 {
		return args, nil
	}
	it, ok := args[0].(starlark.Iterable)
	if !ok {
		return args, nil
	}
	sep := int64(len(recv.(starlark.String)))
	var size int64
	i := 0
	for v := range starlark.Elements(it) {
		s, ok := v.(starlark.String)
		if !ok {
			return args, nil // join fails on it
		}
		if i > 0 {
			size = addSize(size, sep)
		}
		size = addSize(size, int64(len(s)))
		if i++; i%deadlineEvery == 0 {
			if err := checkDeadline(thread); err != nil {
				return nil, err
			}
			if st := stateOf(thread); st != nil && (size < 0 || size > st.env.MaxMemory-st.mem) {
				break
			}
		}
	}
	return args, charge(thread, size, func() string {
		return fmt.Sprintf("string.join() of %s with the separator %s", describe(args[0]), describe(recv))
	})
}

func checkFormat(thread *starlark.Thread, recv starlark.Value, _ string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, error) {
	f := string(recv.(starlark.String))
	all := make([]starlark.Value, 0, len(args)+len(kwargs))
	all = append(all, args...)
	for _, kv := range kwargs {
		all = append(all, kv[1])
	}
	return args, chargeFormat(thread, "string.format()", f, strings.Count(f, "{"), starlark.NewList(all))
}

func checkSplit(thread *starlark.Thread, recv starlark.Value, _ string, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Tuple, error) {
	s := string(recv.(starlark.String))
	n := int64(len(s)/2 + 1)
	if len(args) > 0 {
		if sep, ok := args[0].(starlark.String); ok && sep != "" {
			n = int64(strings.Count(s, string(sep)) + 1)
		}
	}
	return args, charge(thread, mulSize(n, slotBytes), methodWhat(recv, "split"))
}

func checkSplitlines(thread *starlark.Thread, recv starlark.Value, _ string, args starlark.Tuple, _ []starlark.Tuple) (starlark.Tuple, error) {
	s := string(recv.(starlark.String))
	n := int64(strings.Count(s, "\n") + strings.Count(s, "\r") + 1)
	return args, charge(thread, mulSize(n, slotBytes), methodWhat(recv, "splitlines"))
}
