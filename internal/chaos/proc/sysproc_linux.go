package proc

import "syscall"

// sysProcAttr makes children die with the harness (SIGKILL on the parent's
// death), so that a harness killed mid-run leaves no process behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
