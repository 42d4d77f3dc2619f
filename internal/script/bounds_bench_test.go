package script

import (
	"testing"

	"go.starlark.net/starlark"
)

// boundsBenchSrc is arithmetic, appends, a string built by += and a dict
// filled by item assignment: the operations the rewrite turns into calls.
const boundsBenchSrc = `
def f():
    x = 0
    l = []
    d = {}
    s = ""
    for i in range(2000):
        x = x + i * 2
        l.append(i)
        d[i] = x
        s += "a"
    return len(s) + len(l) + len(d) + x
r = f()
`

// BenchmarkBounds compares a script run as plain Starlark with the same
// script rewritten and with bounded builtins: the cost of the memory
// budget. BENCHMARKS.md has the figures.
func BenchmarkBounds(b *testing.B) {
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			if _, err := starlark.ExecFileOptions(fileOptions, &starlark.Thread{}, "code", boundsBenchSrc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bounded", func(b *testing.B) {
		for b.Loop() {
			if _, err := runRewritten(boundsBenchSrc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
