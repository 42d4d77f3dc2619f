package scripts

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// setAddressSpaceLimit limits this process's address space to what it has
// mapped now plus n bytes: an allocation beyond that fails, and the Go
// runtime dies of it, alone. The limit is relative because a Go process has
// reserved gigabytes of address space before main runs, holding no memory
// (the runtime's page summaries; Starlark's table of small integers alone
// is 4 GiB): an absolute limit below that would fail every mapping from
// the first heap growth on.
func setAddressSpaceLimit(n uint64) error {
	now, err := mappedBytes()
	if err != nil {
		return err
	}
	limit := now + n
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return fmt.Errorf("setrlimit(RLIMIT_AS, %d): %w", limit, err)
	}
	return nil
}

// mappedBytes is the size of this process's address space, from
// /proc/self/statm (its first field, in pages).
func mappedBytes() (uint64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("address space: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("address space: /proc/self/statm is empty")
	}
	pages, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("address space: /proc/self/statm: %w", err)
	}
	return pages * uint64(os.Getpagesize()), nil
}
