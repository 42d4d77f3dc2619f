package lazyfs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// file is an open regular file: the loopback's handle of the backing file,
// with writes kept in the FS until the file is synced.
type file struct {
	*fs.LoopbackFile
	l    *FS
	ino  uint64 // of the backing file
	fd   int    // the backing descriptor, owned by LoopbackFile
	sync bool   // opened with O_SYNC or O_DSYNC
}

var (
	_ fs.FileReader          = (*file)(nil)
	_ fs.FileWriter          = (*file)(nil)
	_ fs.FileWritever        = (*file)(nil)
	_ fs.FileFsyncer         = (*file)(nil)
	_ fs.FileGetattrer       = (*file)(nil)
	_ fs.FileSetattrer       = (*file)(nil)
	_ fs.FileAllocater       = (*file)(nil)
	_ fs.FilePassthroughFder = (*file)(nil)
)

// newFile wraps a loopback handle opened with flags.
func newFile(l *FS, h fs.FileHandle, flags uint32) (*file, syscall.Errno) {
	lf, ok := h.(*fs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		lf.Release(context.Background())
		return nil, syscall.EBADF
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		lf.Release(context.Background())
		return nil, fs.ToErrno(err)
	}
	return &file{LoopbackFile: lf, l: l, ino: st.Ino, fd: fd, sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}, 0
}

// PassthroughFd refuses the kernel's passthrough of reads and writes to
// the backing file, which would go around the unsynced writes.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	d := f.l.lookup(f.ino)
	if d == nil {
		return f.LoopbackFile.Read(ctx, buf, off)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ov.empty() {
		return f.LoopbackFile.Read(ctx, buf, off)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	base := make([]byte, len(buf))
	n, err := syscall.Pread(f.fd, base, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	n = d.ov.read(buf, off, base[:max(n, 0)], st.Size)
	return fuse.ReadResultData(buf[:n]), 0
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.l.write(f.ino, f.fd, data, off); errno != 0 {
		return 0, errno
	}
	if f.sync {
		if errno := f.l.sync(f.ino); errno != 0 {
			return 0, errno
		}
	}
	return uint32(len(data)), 0
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var all []byte
	for _, p := range data {
		all = append(all, p...)
	}
	return f.Write(ctx, all, off)
}

// Fsync writes the file's unsynced writes through and syncs the backing
// file (fsync and fdatasync alike).
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := f.l.sync(f.ino); errno != 0 {
		return errno
	}
	return f.LoopbackFile.Fsync(ctx, flags)
}

func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	if errno := f.LoopbackFile.Getattr(ctx, out); errno != 0 {
		return errno
	}
	f.l.adjust(f.ino, &out.Attr)
	return 0
}

// Setattr applies at once, a size change too, which cuts the unsynced
// writes past the new size.
func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if f.l.dead.Load() {
		return syscall.EIO
	}
	if sz, ok := in.GetSize(); ok {
		if d := f.l.lookup(f.ino); d != nil {
			d.mu.Lock()
			errno := f.LoopbackFile.Setattr(ctx, in, out)
			if errno == 0 {
				d.ov.truncate(int64(sz))
			}
			d.mu.Unlock()
			if errno != 0 {
				return errno
			}
			return f.Getattr(ctx, out)
		}
	}
	if errno := f.LoopbackFile.Setattr(ctx, in, out); errno != 0 {
		return errno
	}
	return f.Getattr(ctx, out)
}

func (f *file) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	if f.l.dead.Load() {
		return syscall.EIO
	}
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}
