//go:build !linux

package scripts

import "errors"

// setAddressSpaceLimit is Linux's only: elsewhere, process isolation runs
// children without the limit it promises, so it refuses.
func setAddressSpaceLimit(n uint64) error {
	return errors.New("process isolation limits the address space with setrlimit(RLIMIT_AS), which only Linux supports here")
}
