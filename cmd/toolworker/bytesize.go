package main

import (
	"fmt"
	"strconv"
	"strings"
)

// byteSize is a flag of a size in bytes, written as a number with an
// optional unit: 65536, 512KiB, 64MiB, 1GiB (KB, MB and GB mean the same
// powers of 1024, as people write them).
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

// Set parses s; the error says what a size looks like.
func (b *byteSize) Set(s string) error {
	units := []struct {
		suffix string
		shift  uint
	}{{"kib", 10}, {"mib", 20}, {"gib", 30}, {"kb", 10}, {"mb", 20}, {"gb", 30}, {"k", 10}, {"m", 20}, {"g", 30}, {"b", 0}}
	t := strings.ToLower(strings.TrimSpace(s))
	shift := uint(0)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, shift = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return fmt.Errorf("%q is not a size: give bytes, or a number with KiB, MiB or GiB, such as 64MiB", s)
	}
	*b = byteSize(n << shift)
	return nil
}
