package script

import (
	"fmt"
	"math/bits"
	"strconv"
	"unsafe"

	"go.starlark.net/starlark"

	"github.com/agentfleet/agentfleet/internal/script/procmem"
)

// The memory budget of a call counts the bytes that the call's bounded
// operations allocate, in total: repetition, concatenation, formatting,
// materialising lists, decoding JSON and the like (see bounded.go). Each
// operation computes the size of what it will make before it makes it and
// fails when that would take the call over its budget, so that no single
// step can allocate far beyond it. The budget counts what was allocated, not
// what is held at once: it is deterministic (the same script and arguments
// exceed it at the same place, whatever the garbage collector does) and it
// bounds the work too, since every byte counted is a byte written.

// Sizes the budget charges for values it cannot measure exactly: a slot of a
// list or tuple (an interface value) together with a boxed element, and an
// entry of a dict or set's hash table, with its share of the table's
// growth.
const (
	slotBytes  = 32
	entryBytes = 128
	// maxIntBits bounds the integers a script may make by * and <<; their
	// cost grows faster than their size (multiplication, decimal
	// conversion), so they are bounded far below the memory budget.
	maxIntBits = 1 << 16
	// maxValueDepth bounds the nesting of values that str, repr, print,
	// % and json.encode measure before they convert them.
	maxValueDepth = 1000
	// deadlineEvery is how many elements a long builtin handles between
	// checks of the call's deadline.
	deadlineEvery = 1 << 12
)

// memError is the error of an operation that would take a call over its
// memory budget.
type memError struct {
	budget int64
	what   string // "string repetition (\"x\" * 1000000000)"
}

func (e *memError) Error() string {
	return fmt.Sprintf("memory budget of %s exceeded by %s", procmem.FormatBytes(e.budget), e.what)
}

// charge counts n more bytes against the budget of the call running on
// thread, or fails with a *memError naming what (formatted lazily, since
// it is needed only on failure). Threads without a call state (none in
// practice) are not bounded.
func charge(thread *starlark.Thread, n int64, what func() string) error {
	if thread == nil {
		return nil
	}
	st := stateOf(thread)
	if st == nil {
		return nil
	}
	if n < 0 || n > st.env.MaxMemory-st.mem {
		st.mem = st.env.MaxMemory
		return &memError{budget: st.env.MaxMemory, what: what()}
	}
	st.mem += n
	return nil
}

// fits charges n bytes when they fit in the budget of the call running on
// thread, and reports whether they did; a caller that gets false calls
// charge for the error. Operations that run once per element use it, so
// that they make the closure that names them only when they fail.
func fits(thread *starlark.Thread, n int64) bool {
	st := stateOf(thread)
	if st == nil {
		return true
	}
	if n < 0 || n > st.env.MaxMemory-st.mem {
		return false
	}
	st.mem += n
	return true
}

// checkDeadline fails when the call running on thread has run out of time
// or was canceled; long builtins call it every deadlineEvery elements,
// since Starlark checks thread.Cancel only between steps.
func checkDeadline(thread *starlark.Thread) error {
	if thread == nil {
		return nil
	}
	st := stateOf(thread)
	if st == nil || st.ctx == nil {
		return nil
	}
	if err := st.ctx.Err(); err != nil {
		return fmt.Errorf("stopped inside a builtin: %w", err)
	}
	return nil
}

// mulSize returns a*b, or -1 when it overflows.
func mulSize(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > 1<<62 {
		return -1
	}
	return int64(lo)
}

// addSize returns a+b, or -1 when it overflows or either is -1.
func addSize(a, b int64) int64 {
	if a < 0 || b < 0 || a > 1<<62-b {
		return -1
	}
	return a + b
}

// describe renders an operand for an error message: short values as they
// are, long ones by their type and size, so that the message itself stays
// small.
func describe(v starlark.Value) string {
	switch v := v.(type) {
	case starlark.String:
		if len(v) <= 24 {
			return strconv.Quote(string(v))
		}
		return fmt.Sprintf("<string of %d bytes>", len(v))
	case starlark.Bytes:
		if len(v) <= 24 {
			return v.String()
		}
		return fmt.Sprintf("<bytes of %d bytes>", len(v))
	case starlark.Int:
		if intBits(v) <= 64 {
			return v.String()
		}
		return fmt.Sprintf("<int of %d bits>", intBits(v))
	case starlark.Float, starlark.Bool, starlark.NoneType:
		return v.String()
	}
	if n := starlark.Len(v); n >= 0 {
		return fmt.Sprintf("<%s of %d elements>", v.Type(), n)
	}
	return "<" + v.Type() + ">"
}

// sizer estimates the length of the text of a value (its str or repr, or
// its JSON), without making it: it walks the value, adding the length of
// each part, and stops as soon as the sum passes limit, so that its own
// cost is bounded by the limit. Nesting deeper than maxValueDepth is an
// error, as the conversion itself would recurse that deep.
type sizer struct {
	thread *starlark.Thread
	limit  int64
	n      int64
	seen   int
	path   []starlark.Value // containers being walked, for cycles
	// strs remembers the size of long strings met already: a list may
	// hold the same string many times, and scanning it again each time
	// would cost far more than the estimate is worth.
	strs map[strKey]int64
}

type strKey struct {
	p *byte
	n int
}

// errTooDeep is the error of measuring a value nested beyond maxValueDepth.
var errTooDeep = fmt.Errorf("value nests deeper than %d levels", maxValueDepth)

// textSize returns an upper estimate of the length of v's text, or a number
// above limit as soon as it passes limit.
func textSize(thread *starlark.Thread, v starlark.Value, limit int64) (int64, error) {
	s := &sizer{thread: thread, limit: limit}
	err := s.walk(v)
	return s.n, err
}

func (s *sizer) walk(v starlark.Value) error {
	if s.n > s.limit {
		return nil
	}
	s.seen++
	if s.seen%deadlineEvery == 0 {
		if err := checkDeadline(s.thread); err != nil {
			return err
		}
	}
	switch v := v.(type) {
	case starlark.String:
		s.n += s.stringSize(string(v))
		return nil
	case starlark.Bytes:
		s.n += int64(len(v))*4 + 3
		return nil
	case starlark.Int:
		s.n += int64(intBits(v))/3 + 2
		return nil
	case starlark.Float:
		s.n += 32
		return nil
	case starlark.Bool, starlark.NoneType:
		s.n += 5
		return nil
	case *starlark.List, starlark.Tuple, *starlark.Dict, *starlark.Set:
	default:
		// Functions, builtins, modules, ranges: short texts.
		s.n += 64
		return nil
	}
	for _, p := range s.path {
		if p == v {
			s.n += 5 // "[...]"
			return nil
		}
	}
	if len(s.path) >= maxValueDepth {
		return errTooDeep
	}
	s.path = append(s.path, v)
	defer func() { s.path = s.path[:len(s.path)-1] }()
	s.n += 2
	switch v := v.(type) {
	case *starlark.Dict:
		for k, e := range v.Entries() {
			s.n += 4
			if err := s.walk(k); err != nil {
				return err
			}
			if err := s.walk(e); err != nil {
				return err
			}
			if s.n > s.limit {
				return nil
			}
		}
	default:
		s.n += 5 // set(), (x,)
		for e := range starlark.Elements(v.(starlark.Iterable)) {
			s.n += 2
			if err := s.walk(e); err != nil {
				return err
			}
			if s.n > s.limit {
				return nil
			}
		}
	}
	return nil
}

// stringSize is the length of the quoted text of v: quotes and escapes,
// where an escaped byte takes at most six characters (\u00XX in JSON).
func (s *sizer) stringSize(v string) int64 {
	long := len(v) >= 4096
	if long {
		if n, ok := s.strs[strKey{unsafe.StringData(v), len(v)}]; ok {
			return n
		}
	}
	n := int64(len(v)) + 2
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '"' || c == '\\' || c == 0x7f {
			n += 5
		}
	}
	if long {
		if s.strs == nil {
			s.strs = map[strKey]int64{}
		}
		s.strs[strKey{unsafe.StringData(v), len(v)}] = n
	}
	return n
}

// chargeText charges the budget for the text of v that op is about to make.
func chargeText(thread *starlark.Thread, op string, v starlark.Value) error {
	st := stateOf(thread)
	if st == nil {
		return nil
	}
	n, err := textSize(thread, v, st.env.MaxMemory-st.mem)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return charge(thread, n, func() string { return fmt.Sprintf("%s of %s", op, describe(v)) })
}

// intBits is the length of an integer in bits.
func intBits(v starlark.Int) int {
	if i, ok := v.Int64(); ok {
		if i < 0 {
			i = -i
		}
		return bits.Len64(uint64(i))
	}
	return v.BigInt().BitLen()
}

// checkJSONSize fails when the JSON of v is sure to exceed limit bytes,
// before v is converted: a list that holds one long string a million times
// is small for the budget, yet converting and measuring it would take
// hours. Values that pass are measured exactly after their conversion.
func checkJSONSize(v starlark.Value, what string, limit int) error {
	// textSize overestimates escapes up to six times; anything within
	// that margin is measured exactly later.
	bound := int64(limit)*6 + 64
	n, err := textSize(nil, v, bound)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n > bound {
		return fmt.Errorf("%s is more than %d bytes as JSON, the limit is %d", what, bound, limit)
	}
	return nil
}
