package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/nats-io/nats-server/v2/server"
)

// ErrDataDir is returned when the JetStream data directory cannot be
// created or written.
var ErrDataDir = errors.New("JetStream data directory is not writable")

// ErrDataDirInUse is returned when another embedded server, in this
// process or another, already stores in the data directory. nats-server's
// file store takes no lock of its own, and two servers writing one store
// corrupt it.
var ErrDataDirInUse = errors.New("JetStream data directory is in use by another server")

// dataDirLockName is the lock file in the data directory.
const dataDirLockName = "agentfleet.lock"

// heldDirs are the data directories this process has locked, with the
// server that uses each. flock does not tell a process that it already
// holds a lock through another descriptor in a way that is safe to reuse,
// and a server shut down by its caller must free its directory at once, so
// that it can be started again on it (tests restart servers in place).
var (
	heldMu   sync.Mutex
	heldDirs = map[string]*dirLock{}
)

type dirLock struct {
	f   *os.File
	srv *server.Server // nil until the server is made
}

// lockDataDir creates dir if needed, checks that it can be written, and
// takes its lock; the lock is released by releaseDataDir, or once the
// server bound to it by bindDataDir has shut down and another server asks
// for the directory.
func lockDataDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrDataDir, dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("%w: cannot create %s: %v", ErrDataDir, abs, unwrapPath(err))
	}
	// A probe file, since the lock file may exist already and open for
	// writing while the directory itself refuses new files.
	probe, err := os.CreateTemp(abs, ".write-probe-*")
	if err != nil {
		return "", fmt.Errorf("%w: cannot create a file in %s: %v", ErrDataDir, abs, unwrapPath(err))
	}
	probe.Close()
	os.Remove(probe.Name())

	heldMu.Lock()
	defer heldMu.Unlock()
	if held, ok := heldDirs[abs]; ok {
		if held.srv == nil || held.srv.Running() {
			return "", fmt.Errorf("%w: %s is used by another embedded NATS server in this process", ErrDataDirInUse, abs)
		}
		held.srv.WaitForShutdown()
		held.f.Close()
		delete(heldDirs, abs)
	}
	path := filepath.Join(abs, dataDirLockName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("%w: cannot open %s: %v", ErrDataDir, path, unwrapPath(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return "", fmt.Errorf("%w: %s is locked (%s) by another process, likely another orchestrator", ErrDataDirInUse, abs, path)
		}
		return "", fmt.Errorf("%w: cannot lock %s: %v", ErrDataDir, path, err)
	}
	// Truncate only once locked: the holder's pid stays readable to whom
	// the lock refused.
	f.Truncate(0)
	fmt.Fprintf(f, "%d\n", os.Getpid())
	heldDirs[abs] = &dirLock{f: f}
	return abs, nil
}

// bindDataDir ties the lock of dir to srv: it is freed once srv has shut
// down (checked when the directory is asked for again, and when the
// process exits the kernel frees it anyway).
func bindDataDir(dir string, srv *server.Server) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if held, ok := heldDirs[dir]; ok {
		held.srv = srv
	}
	go func() {
		srv.WaitForShutdown()
		releaseDataDir(dir, srv)
	}()
}

// releaseDataDir frees the lock of dir, if srv (nil: no server yet) holds
// it.
func releaseDataDir(dir string, srv *server.Server) {
	heldMu.Lock()
	defer heldMu.Unlock()
	if held, ok := heldDirs[dir]; ok && held.srv == srv {
		held.f.Close()
		delete(heldDirs, dir)
	}
}

// unwrapPath drops the operation and path of a *PathError, which the
// messages above name themselves.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
