package lazyfs

// extent is one unsynced write: data at off.
type extent struct {
	off  int64
	data []byte
}

// overlay is the unsynced writes of one file, in the order they were
// made, over the content of its backing file. It is a plain value: the
// file system locks it.
type overlay struct {
	ext []extent
}

// write records p (copied) at off. A write that continues the last one
// extends it, so that a file written by appends holds one extent.
func (o *overlay) write(off int64, p []byte) {
	if n := len(o.ext); n > 0 {
		last := &o.ext[n-1]
		if last.off+int64(len(last.data)) == off {
			last.data = append(last.data, p...)
			return
		}
	}
	o.ext = append(o.ext, extent{off: off, data: append([]byte(nil), p...)})
}

// empty reports whether nothing is unsynced.
func (o *overlay) empty() bool { return len(o.ext) == 0 }

// size is the file's size seen through the overlay, given the backing
// file's.
func (o *overlay) size(backing int64) int64 {
	s := backing
	for _, e := range o.ext {
		s = max(s, e.off+int64(len(e.data)))
	}
	return s
}

// read fills buf with the file's content at off seen through the overlay
// and returns how many bytes it holds: base is what the backing file
// returned at off (it may be short), backing the backing file's size.
// Bytes past the backing content and under no write are zeros (a hole).
func (o *overlay) read(buf []byte, off int64, base []byte, backing int64) int {
	size := o.size(backing)
	if off >= size {
		return 0
	}
	n := int(min(int64(len(buf)), size-off))
	c := copy(buf[:n], base)
	clear(buf[c:n])
	for _, e := range o.ext {
		lo, hi := max(off, e.off), min(off+int64(n), e.off+int64(len(e.data)))
		if lo < hi {
			copy(buf[lo-off:hi-off], e.data[lo-e.off:hi-e.off])
		}
	}
	return n
}

// truncate cuts every write at size, which the backing file was truncated
// to at once (a size change is metadata).
func (o *overlay) truncate(size int64) {
	kept := o.ext[:0]
	for _, e := range o.ext {
		if e.off >= size {
			continue
		}
		if end := e.off + int64(len(e.data)); end > size {
			e.data = e.data[:size-e.off]
		}
		kept = append(kept, e)
	}
	clear(o.ext[len(kept):])
	o.ext = kept
}
