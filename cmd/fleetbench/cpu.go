package main

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ),
// 100 per second on Linux.
const clockTick = 10 * time.Millisecond

// processCPU returns the user plus system CPU time that the process pid
// ("self" for this one) has used, from /proc; 0 where there is no /proc.
// Its resolution is a clock tick, 10 ms, which is fine over runs of
// seconds.
func processCPU(pid string) time.Duration {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, the 12th and 13th after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * clockTick
}

// cpuMeter reads the CPU time of this process and of some children.
type cpuMeter struct {
	children []*child
}

// read returns the CPU time used so far by this process and by the
// children.
func (m cpuMeter) read() (self, children time.Duration) {
	self = processCPU("self")
	for _, c := range m.children {
		children += processCPU(strconv.Itoa(c.cmd.Process.Pid))
	}
	return self, children
}
