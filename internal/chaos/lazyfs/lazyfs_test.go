package lazyfs

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// mount mounts a lazy file system over a new backing directory, or skips
// the test when FUSE cannot be used here.
func mount(t *testing.T) (l *FS, backing string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no FUSE here, so no power-loss tests: %v", err)
	}
	backing, mnt := t.TempDir(), t.TempDir()
	l, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unmount() })
	return l, backing
}

func writeFile(t *testing.T, path string, flag int, data string, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestLazyFS: writes are seen through the mount at once, reach the backing
// directory only when their file is synced (or opened with O_SYNC, or at
// a checkpoint), and a power cut drops the rest and fails what follows;
// metadata applies at once.
func TestLazyFS(t *testing.T) {
	l, backing := mount(t)
	mnt := l.Mountpoint()
	at := func(name string) (string, string) { return filepath.Join(mnt, name), filepath.Join(backing, name) }

	checkpointed, checkpointedB := at("checkpointed")
	writeFile(t, checkpointed, 0, "at a checkpoint", false)
	if err := l.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, checkpointed, os.O_APPEND, " and after", false)
	synced, syncedB := at("synced")
	writeFile(t, synced, 0, "first", true)
	writeFile(t, synced, os.O_APPEND, "+lazy", false)
	lazy, lazyB := at("lazy")
	writeFile(t, lazy, 0, "never synced", false)
	osync, osyncB := at("osync")
	writeFile(t, osync, syscall.O_SYNC, "synced by O_SYNC", false)
	renamed, renamedB := at("renamed")
	writeFile(t, filepath.Join(mnt, "tmp"), 0, "synced, then renamed", true)
	if err := os.Rename(filepath.Join(mnt, "tmp"), renamed); err != nil {
		t.Fatal(err)
	}

	for path, want := range map[string]string{synced: "first+lazy", lazy: "never synced", osync: "synced by O_SYNC", renamed: "synced, then renamed", checkpointed: "at a checkpoint and after"} {
		if got := readFile(t, path); got != want {
			t.Errorf("read %s through the mount: %q, want %q", filepath.Base(path), got, want)
		}
		if st, err := os.Stat(path); err != nil || st.Size() != int64(len(want)) {
			t.Errorf("stat %s: size %v (%v), want %d", filepath.Base(path), st.Size(), err, len(want))
		}
	}
	if got := readFile(t, lazyB); got != "" {
		t.Errorf("backing file of an unsynced write holds %q before any sync", got)
	}
	if got := l.Unsynced(); got != 3 {
		t.Errorf("%d files unsynced, want 3 (synced, lazy, checkpointed)", got)
	}

	files, n := l.PowerCut()
	if files != 3 || n != int64(len("+lazy")+len("never synced")+len(" and after")) {
		t.Errorf("power cut dropped %d bytes of %d files, want %d of 3", n, files, len("+lazy")+len("never synced")+len(" and after"))
	}
	if f, err := os.OpenFile(synced, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_, werr := f.WriteString("after the cut")
		serr := f.Sync()
		f.Close()
		if werr == nil && serr == nil {
			t.Error("a write and sync after the power cut succeeded")
		}
	}
	if err := os.Mkdir(filepath.Join(mnt, "dir"), 0o755); err == nil {
		t.Error("mkdir after the power cut succeeded")
	}
	if err := l.Unmount(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{syncedB: "first", lazyB: "", osyncB: "synced by O_SYNC", renamedB: "synced, then renamed", checkpointedB: "at a checkpoint"} {
		if got := readFile(t, path); got != want {
			t.Errorf("after the power cut %s holds %q, want %q", filepath.Base(path), got, want)
		}
	}
	if _, err := os.Stat(lazyB); err != nil {
		t.Errorf("an unsynced file's creation (metadata) was lost: %v", err)
	}
}

// TestLazyFSReadsAndTruncate: reads at offsets mix backing and unsynced
// bytes, a truncate applies at once and cuts unsynced writes, and a file
// created anew under a reused inode number sees nothing of a removed one.
func TestLazyFSReadsAndTruncate(t *testing.T) {
	l, backing := mount(t)
	p := filepath.Join(l.Mountpoint(), "f")
	writeFile(t, p, 0, "0123456789", true)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("ab"), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("XYZ"), 12); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 20)
	n, _ := f.ReadAt(buf, 2)
	if got, want := buf[:n], []byte("2ab56789\x00\x00XYZ"); !bytes.Equal(got, want) {
		t.Errorf("read at 2: %q, want %q", got, want)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != "012ab" {
		t.Errorf("after truncate to 5: %q, want 012ab", got)
	}
	if got := readFile(t, filepath.Join(backing, "f")); got != "01234" {
		t.Errorf("backing after truncate to 5: %q, want 01234 (the size at once, the write not)", got)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(backing, "f")); got != "012ab" {
		t.Errorf("backing after sync: %q, want 012ab", got)
	}
}

// TestLazyFSReadWithoutStat: a file written and closed unsynced, opened
// again and read without a stat first, reads whole (lookups, opens and
// attribute requests all give the size seen through the unsynced writes).
func TestLazyFSReadWithoutStat(t *testing.T) {
	l, _ := mount(t)
	p := filepath.Join(l.Mountpoint(), "f")
	writeFile(t, p, 0, "synced", true)
	writeFile(t, p, os.O_APPEND, " and unsynced", false)
	fd, err := syscall.Open(p, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := make([]byte, 64)
	n, err := syscall.Read(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(buf[:n]); got != "synced and unsynced" {
		t.Errorf("read %q, want %q", got, "synced and unsynced")
	}
}
