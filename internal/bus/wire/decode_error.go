package wire

import (
	"fmt"
	"unicode/utf8"
)

// DecodeError is the error of a wire message that does not decode. It says
// which message, which field (a path such as "args.items[3].name"; empty
// for the message as a whole), the byte offset of the value at fault and
// what is wrong with it.
type DecodeError struct {
	Message string // "call request", "frame" or "cancel"
	Field   string
	Offset  int
	Reason  string
}

func (e *DecodeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s %s at byte %d", e.Message, e.Reason, e.Offset)
	}
	return fmt.Sprintf("%s field %q: %s at byte %d", e.Message, e.Field, e.Reason, e.Offset)
}

// under puts e below the path segment seg: a map key, or "[i]" for the
// element of an array. Paths are built only when decoding fails, as the
// error goes back up, so that a message that decodes pays nothing for them.
func (e *DecodeError) under(seg string) *DecodeError {
	switch {
	case e.Field == "":
		e.Field = seg
	case e.Field[0] == '[':
		e.Field = seg + e.Field
	default:
		e.Field = seg + "." + e.Field
	}
	return e
}

// maxKeyInPath bounds a map key quoted in an error, which may end up in a
// header or a log line.
const maxKeyInPath = 64

func keySegment(k string) string {
	if len(k) > maxKeyInPath {
		k = k[:maxKeyInPath]
		for len(k) > 0 && !utf8.ValidString(k) {
			k = k[:len(k)-1]
		}
		k += "…"
	}
	return k
}

// The costs charged to the budget, in bytes: upper bounds of what the Go
// runtime allocates for each kind of value (measured with
// runtime.MemStats.TotalAlloc on Go 1.26, size classes included).
const (
	costBox      = 16  // a scalar boxed into an interface
	costSliceBox = 24  // the header of a slice boxed into an interface
	costEmptyMap = 48  // a map without entries
	costSmallMap = 336 // a map of 1 to 8 entries: its header and one group
	costMapEntry = 96  // per entry of a larger map
	costAnySlot  = 18  // per element of a []any, with size-class rounding
)

// stringCost is what a string of n bytes takes, rounded up to its size
// class (at most an eighth more, or 16 bytes for small ones).
func stringCost(n int) int { return n + n/8 + 16 }

func mapCost(n int) int {
	switch {
	case n == 0:
		return costEmptyMap
	case n <= 8:
		return costSmallMap
	default:
		return costEmptyMap + costMapEntry*n
	}
}
