package proc

import (
	"fmt"
	"os/exec"
	"runtime"
)

// StartHog starts a CPU hog: one busy loop per core, each its own child
// process (a shell loop) so that the fleet's processes compete with it as
// with any other load on the machine. stop kills them and waits; it is
// safe to call more than once.
func StartHog() (stop func(), err error) {
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	for range runtime.NumCPU() {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("proc: CPU hog: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
