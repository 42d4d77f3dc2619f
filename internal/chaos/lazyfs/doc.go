// Package lazyfs is a FUSE file system for power-loss tests, in the style
// of Jepsen's LazyFS: a loopback over a backing directory that keeps the
// data written to a file in memory until that file is synced, and drops it
// all on a simulated power cut.
//
// The model:
//   - Data. A write to a regular file is kept in memory, per file (inode),
//     and is seen by every read and by the file's size at once. fsync or
//     fdatasync of the file writes what it holds to the backing file and
//     syncs it; a file opened with O_SYNC or O_DSYNC syncs on every write.
//     Closing a file syncs nothing. Checkpoint syncs every file, as an
//     operating system's writeback eventually does.
//   - Metadata. Creating, renaming, linking and removing files and
//     directories, and changing a file's size with truncate or fallocate,
//     apply to the backing directory at once, as if the file system
//     journaled its metadata synchronously; syncing a directory is a no-op.
//   - PowerCut drops every unsynced write and fails every later write,
//     sync and change with EIO, as a machine that lost its power would; the
//     processes using the mount are then killed, it is unmounted, and a new
//     mount over the same backing directory sees only what was synced.
//
// Mount needs /dev/fuse and the right to mount (root); it mounts with
// mount(2) itself, without a fusermount binary. Available tells whether it
// can. It imports go-fuse and the standard library, nothing of the fleet.
package lazyfs
