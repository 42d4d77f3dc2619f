package lazyfs

import (
	"bytes"
	"testing"
)

// TestOverlay: reads through the unsynced writes see them over the backing
// content, in the order they were made, with holes as zeros; the size is
// the larger of the backing file's and the writes' end; a truncate cuts
// the writes.
func TestOverlay(t *testing.T) {
	type write struct {
		off  int64
		data string
	}
	cases := []struct {
		name     string
		backing  string
		writes   []write
		truncate int64 // applied to both when ≥ 0
		off      int64
		buflen   int
		want     string
		size     int64
		extents  int
	}{
		{name: "nothing unsynced", backing: "abc", truncate: -1, buflen: 8, want: "abc", size: 3},
		{name: "append", backing: "abc", writes: []write{{3, "de"}, {5, "f"}}, truncate: -1, buflen: 8, want: "abcdef", size: 6, extents: 1},
		{name: "overwrite", backing: "abcdef", writes: []write{{1, "XY"}}, truncate: -1, buflen: 8, want: "aXYdef", size: 6, extents: 1},
		{name: "later write wins", backing: "", writes: []write{{0, "aaaa"}, {1, "bb"}, {2, "c"}}, truncate: -1, buflen: 8, want: "abca", size: 4, extents: 3},
		{name: "hole is zeros", backing: "ab", writes: []write{{4, "z"}}, truncate: -1, buflen: 8, want: "ab\x00\x00z", size: 5, extents: 1},
		{name: "read at an offset", backing: "abcdef", writes: []write{{4, "XYZ"}}, truncate: -1, off: 3, buflen: 2, want: "dX", size: 7, extents: 1},
		{name: "read past the end", backing: "ab", writes: []write{{2, "c"}}, truncate: -1, off: 5, buflen: 4, want: "", size: 3, extents: 1},
		{name: "truncate cuts writes", backing: "ab", writes: []write{{2, "cdef"}, {7, "x"}}, truncate: 4, buflen: 8, want: "abcd", size: 4, extents: 1},
		{name: "truncate to zero", backing: "", writes: []write{{0, "abc"}}, truncate: 0, buflen: 8, want: "", size: 0, extents: 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o overlay
			for _, w := range c.writes {
				o.write(w.off, []byte(w.data))
			}
			backing := []byte(c.backing)
			if c.truncate >= 0 {
				o.truncate(c.truncate)
				if int64(len(backing)) > c.truncate {
					backing = backing[:c.truncate]
				} else {
					backing = append(backing, make([]byte, c.truncate-int64(len(backing)))...)
				}
			}
			var base []byte
			if c.off < int64(len(backing)) {
				base = backing[c.off:min(int64(len(backing)), c.off+int64(c.buflen))]
			}
			buf := bytes.Repeat([]byte{'#'}, c.buflen)
			n := o.read(buf, c.off, base, int64(len(backing)))
			if got := string(buf[:n]); got != c.want {
				t.Errorf("read %q, want %q", got, c.want)
			}
			if got := o.size(int64(len(backing))); got != c.size {
				t.Errorf("size %d, want %d", got, c.size)
			}
			if len(o.ext) != c.extents || o.empty() != (c.extents == 0) {
				t.Errorf("%d extents (empty %v), want %d", len(o.ext), o.empty(), c.extents)
			}
		})
	}
}

// TestOverlayWriteCopies: a write keeps its own copy of the caller's
// buffer, which FUSE reuses.
func TestOverlayWriteCopies(t *testing.T) {
	var o overlay
	p := []byte("abc")
	o.write(0, p)
	copy(p, "XYZ")
	buf := make([]byte, 3)
	if n := o.read(buf, 0, nil, 0); string(buf[:n]) != "abc" {
		t.Errorf("read %q after the caller reused its buffer, want abc", buf[:n])
	}
}
