package lazyfs

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is one mount of a lazy file system. Its methods may be called from
// any goroutine, but never from code that serves the mount's own requests.
type FS struct {
	backing, mountpoint string
	server              *fuse.Server

	dead atomic.Bool // the power was cut

	mu    sync.Mutex
	files map[uint64]*dirty // by backing inode: files with unsynced writes
}

// dirty is one file's unsynced writes, with a descriptor of its backing
// file to write them through when it is synced, which outlives the
// handles that wrote them.
type dirty struct {
	mu sync.Mutex
	f  *os.File // nil once synced or cut
	ov overlay
}

// ErrUnavailable is returned by Mount when FUSE cannot be used here.
var ErrUnavailable = errors.New("lazyfs: FUSE is not available")

// Available reports whether /dev/fuse can be opened, and if not why: a
// test skips on it.
func Available() error {
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	f.Close()
	return nil
}

// Mount mounts a lazy file system at mountpoint (an existing, empty
// directory) over backing (an existing directory) and returns once it
// serves.
func Mount(backing, mountpoint string) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("lazyfs: backing directory %s: %w", backing, err)
	}
	l := &FS{backing: backing, mountpoint: mountpoint, files: map[uint64]*dirty{}}
	n := &node{LoopbackNode: root.(*fs.LoopbackNode), fs: l}
	zero := time.Duration(0)
	server, err := fs.Mount(mountpoint, n, &fs.Options{
		// No kernel caching of attributes and entries: the size of a
		// file is the overlay's, asked each time.
		AttrTimeout:  &zero,
		EntryTimeout: &zero,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "lazyfs:" + backing,
			Name:              "lazyfs",
			DisableXAttrs:     true,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("lazyfs: mount %s: %w", mountpoint, err)
	}
	l.server = server
	return l, nil
}

// Mountpoint is where the file system is mounted.
func (l *FS) Mountpoint() string { return l.mountpoint }

// Unsynced is the number of files with writes not yet synced.
func (l *FS) Unsynced() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, d := range l.files {
		d.mu.Lock()
		if !d.ov.empty() {
			n++
		}
		d.mu.Unlock()
	}
	return n
}

// PowerCut drops every unsynced write, as a power cut does, and fails
// every later write, sync or change with EIO. It returns the number of
// files and bytes that were dropped.
func (l *FS) PowerCut() (files int, bytes int64) {
	l.dead.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	for ino, d := range l.files {
		d.mu.Lock()
		if !d.ov.empty() {
			files++
		}
		for _, e := range d.ov.ext {
			bytes += int64(len(e.data))
		}
		d.ov = overlay{}
		if d.f != nil {
			d.f.Close()
			d.f = nil
		}
		d.mu.Unlock()
		delete(l.files, ino)
	}
	return files, bytes
}

// Checkpoint syncs every file's unsynced writes to the backing directory,
// as an operating system's writeback does in time.
func (l *FS) Checkpoint() error {
	l.mu.Lock()
	all := make([]uint64, 0, len(l.files))
	for ino := range l.files {
		all = append(all, ino)
	}
	l.mu.Unlock()
	var errs []error
	for _, ino := range all {
		if errno := l.sync(ino); errno != 0 {
			errs = append(errs, fmt.Errorf("lazyfs: checkpoint of inode %d: %w", ino, errno))
		}
	}
	return errors.Join(errs...)
}

// Unmount unmounts the file system; the processes that used it must have
// exited (a busy mount is retried for a few seconds).
func (l *FS) Unmount() error {
	var err error
	for range 50 {
		if err = l.server.Unmount(); err == nil {
			l.server.Wait()
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		// The kernel releases a killed process's files just after
		// it exits; nothing tells when.
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("lazyfs: unmount %s: %w", l.mountpoint, err)
}

// lookup returns the unsynced writes of inode ino, nil if none.
func (l *FS) lookup(ino uint64) *dirty {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files[ino]
}

// forget drops what is recorded for inode ino, a new file whose number
// the backing file system reused.
func (l *FS) forget(ino uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d := l.files[ino]; d != nil {
		d.mu.Lock()
		if d.f != nil {
			d.f.Close()
		}
		d.mu.Unlock()
		delete(l.files, ino)
	}
}

// write records an unsynced write of p at off to inode ino, whose backing
// descriptor is fd.
func (l *FS) write(ino uint64, fd int, p []byte, off int64) syscall.Errno {
	l.mu.Lock()
	if l.dead.Load() {
		l.mu.Unlock()
		return syscall.EIO
	}
	d := l.files[ino]
	if d == nil {
		d = &dirty{}
		l.files[ino] = d
	}
	l.mu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.dead.Load() {
		return syscall.EIO
	}
	if d.f == nil {
		nfd, err := syscall.Dup(fd)
		if err != nil {
			return fs.ToErrno(err)
		}
		d.f = os.NewFile(uintptr(nfd), "")
	}
	d.ov.write(off, p)
	return 0
}

// sync writes inode ino's unsynced writes to its backing file and syncs
// it. A file with nothing unsynced is left alone (its own descriptor is
// synced by the caller).
func (l *FS) sync(ino uint64) syscall.Errno {
	if l.dead.Load() {
		return syscall.EIO
	}
	d := l.lookup(ino)
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l.dead.Load() {
		return syscall.EIO
	}
	if d.f == nil {
		return 0
	}
	for _, e := range d.ov.ext {
		if _, err := d.f.WriteAt(e.data, e.off); err != nil {
			return fs.ToErrno(err)
		}
	}
	if err := d.f.Sync(); err != nil {
		return fs.ToErrno(err)
	}
	// The entry stays, empty, for the next write to this inode.
	d.ov = overlay{}
	d.f.Close()
	d.f = nil
	return 0
}

// adjust sets the size of inode ino's attributes to its size seen through
// its unsynced writes.
func (l *FS) adjust(ino uint64, attr *fuse.Attr) {
	d := l.lookup(ino)
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	attr.Size = uint64(d.ov.size(int64(attr.Size)))
}

// truncate cuts inode ino's unsynced writes at size, which its backing
// file was truncated to.
func (l *FS) truncate(ino uint64, size int64) {
	if d := l.lookup(ino); d != nil {
		d.mu.Lock()
		d.ov.truncate(size)
		d.mu.Unlock()
	}
}
