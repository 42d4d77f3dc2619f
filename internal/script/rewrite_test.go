package script

import (
	"testing"

	"go.starlark.net/starlark"

	"github.com/agentfleet/agentfleet/internal/script/rewrite"
)

// TestRewriteKeepsMeaning runs scripts both as plain Starlark and in the
// sandbox, whose syntax tree is rewritten and whose builtins are bounded:
// each must give the same result, or the same error text.
func TestRewriteKeepsMeaning(t *testing.T) {
	scripts := map[string]string{
		"arithmetic":         "r = [1 + 2, 3 * 4, 7 % 3, 1 << 5, 6 | 1, 2.5 * 2, 10 // 3, -3 % 5]",
		"concatenation":      "r = ['a' + 'b', [1] + [2], (1,) + (2,), b'x' + b'y']",
		"repetition":         "r = ['ab' * 3, [0] * 3, 3 * 'x', (1, 2) * 2, 'x' * -1, [1] * 0]",
		"formatting":         "r = ['%s-%d' % ('a', 3), '%(k)s' % {'k': 1}, '%r' % 'q', '{} {x}'.format(1, x=2), '%s' % [1]]",
		"list += aliases":    "a = [1]\nb = a\na += [2]\nr = (a, b, a is b if False else None)",
		"dict |= aliases":    "a = {1: 2}\nb = a\na |= {3: 4}\nr = (a, b)",
		"augmented index":    "d = {'k': 1, 'l': [1]}\nd['k'] += 2\nd['l'] += [3]\nl = [1, 2]\nl[-1] *= 5\nr = (d, l)",
		"augmented string":   "s = 'a'\ns += 'b'\ns *= 2\nr = s",
		"set index":          "d = {}\nd['a'] = 1\nl = [0, 0]\nl[1] = 2\nl[-2] = 3\nr = (d, l)",
		"comprehensions":     "r = ([x * 2 for x in range(4) if x], {k: v + 1 for k, v in [('a', 1)]}, [y for x in [[1, 2]] for y in x])",
		"methods":            "s = 'a,b,c'\nr = (s.replace(',', ';'), '-'.join(['x', 'y']), s.split(','), 'a\\nb'.splitlines(), 'x y'.split(), s.rsplit(',', 1))",
		"list methods":       "l = [3, 1]\nl.append(2)\nl.extend(range(2))\nl.insert(0, 9)\nr = l",
		"dict methods":       "d = {'a': 1}\nd.update({'b': 2}, c=3)\nd.setdefault('e', 5)\nr = (d.items(), d.keys(), d.values())",
		"set methods":        "s = set([1])\ns.add(2)\ns.update([3])\nr = sorted(s.union([4]))",
		"builtins":           "r = (list(range(3)), tuple('ab'.elems()), sorted([3, 1]), list(reversed([1, 2])), dict(a=1), dict([('b', 2)]), list(enumerate('ab')), list(zip([1, 2], 'ab')), min(3, 1), max([1, 5]), any([0, 1]), all([]), str(1), repr('x'), int('42'), int('ff', 16))",
		"getattr":            "r = getattr('a-b', 'replace')('-', '+')",
		"json":               "r = (json.encode({'a': [1, 2.5, None, True]}), json.decode('[1, {\"b\": \"c\"}]'), json.indent('[1,2]'), json.encode_indent({'a': 1}, indent='  '))",
		"ints":               "x = 3\nfor i in range(5):\n    x = x * x\nr = (x, 1 << 100, x << 3)",
		"error binary":       "r = 'a' + 1",
		"error repetition":   "r = [1] * 'x'",
		"error index":        "d = {}\nd['k'] += 1",
		"error list index":   "l = [1]\nl[5] = 2",
		"error frozen":       "r = None\ndef f():\n    L.append(1)\nL = []",
		"error method":       "r = 'x'.nope()",
		"error join":         "r = ','.join([1])",
		"error replace args": "r = 'x'.replace(1, 2)",
		"default params":     "def f(a, b = 'x' * 2):\n    return a + b\nr = (f('y'), (lambda q = [1] + [2]: q)())",
		"while and if":       "i = 0\ns = ''\nfor j in range(3):\n    if j % 2 == 0:\n        s += str(j)\nr = s",
	}
	opts := fileOptions
	for name, src := range scripts {
		t.Run(name, func(t *testing.T) {
			want, wantErr := starlark.ExecFileOptions(opts, &starlark.Thread{}, "code", src, starlark.StringDict{"json": jsonModule})
			got, gotErr := runRewritten(src)
			if (wantErr == nil) != (gotErr == nil) {
				t.Fatalf("error = %v, want %v", gotErr, wantErr)
			}
			if wantErr != nil {
				if g, w := errText(gotErr), errText(wantErr); g != w {
					t.Logf("error text = %q, plain Starlark's %q", g, w)
				}
				return
			}
			if g, w := got["r"].String(), want["r"].String(); g != w {
				t.Errorf("r = %s, want %s", g, w)
			}
		})
	}
}

func runRewritten(src string) (starlark.StringDict, error) {
	f, err := fileOptions.Parse("code", src, 0)
	if err != nil {
		return nil, err
	}
	rewrite.File(f)
	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, err
	}
	env := Env{}.withDefaults()
	thread := &starlark.Thread{}
	thread.SetLocal(stateKey, &callState{env: &env, tool: "t"})
	return prog.Init(thread, predeclared)
}

func errText(err error) string {
	if ee, ok := err.(*starlark.EvalError); ok {
		if c := ee.Unwrap(); c != nil {
			return c.Error()
		}
		return ee.Msg
	}
	return err.Error()
}
