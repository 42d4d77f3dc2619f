package lazyfs

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node whose regular files keep their writes in the FS
// until synced; its metadata operations apply at once, and fail with EIO
// once the power was cut.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder = (*node)(nil)
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
)

// WrapChild makes every node of the tree a lazy one.
func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fs: n.fs}
}

// backingPath is the node's path in the backing directory.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.RootData.RootNode.EmbeddedInode()))
}

const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&writeFlags != 0 && n.fs.dead.Load() {
		return nil, 0, syscall.EIO
	}
	h, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	f, errno := newFile(n.fs, h, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		n.fs.truncate(f.ino, 0)
	}
	return f, fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.fs.dead.Load() {
		return nil, nil, 0, syscall.EIO
	}
	var st syscall.Stat_t
	existed := syscall.Lstat(filepath.Join(n.backingPath(), name), &st) == nil
	inode, h, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	f, errno := newFile(n.fs, h, flags)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	switch {
	case !existed:
		// A new file: what is recorded under its inode number is of a
		// removed file whose number the backing file system reused.
		n.fs.forget(f.ino)
	case flags&syscall.O_TRUNC != 0:
		n.fs.truncate(f.ino, 0)
	}
	n.fs.adjust(f.ino, &out.Attr)
	return inode, f, fuseFlags, 0
}

// Lookup gives the kernel the size seen through the unsynced writes, which
// bounds its reads of a file it has not asked the attributes of since.
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	child, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 {
		n.fs.adjust(out.Attr.Ino, &out.Attr)
	}
	return child, errno
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if errno := n.LoopbackNode.Getattr(ctx, f, out); errno != 0 {
		return errno
	}
	if f == nil {
		n.fs.adjust(out.Ino, &out.Attr)
	}
	return 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.fs.dead.Load() {
		return syscall.EIO
	}
	if errno := n.LoopbackNode.Setattr(ctx, f, in, out); errno != 0 {
		return errno
	}
	if sz, ok := in.GetSize(); ok && f == nil {
		n.fs.truncate(out.Ino, int64(sz))
		n.fs.adjust(out.Ino, &out.Attr)
	}
	return 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.fs.dead.Load() {
		return nil, syscall.EIO
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if n.fs.dead.Load() {
		return syscall.EIO
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if n.fs.dead.Load() {
		return syscall.EIO
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.fs.dead.Load() {
		return syscall.EIO
	}
	if p, ok := newParent.(*node); ok {
		newParent = p.LoopbackNode
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}
