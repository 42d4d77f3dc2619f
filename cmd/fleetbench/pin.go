package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// parseCPUs reads a CPU list as taskset -c takes it: "1", "0,2", "2-3".
func parseCPUs(list string) (unix.CPUSet, error) {
	var set unix.CPUSet
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= 1024 {
			return set, fmt.Errorf("--server-cpus %q: %q is not a CPU number or range such as 1 or 2-3", list, part)
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return set, nil
}

// splitCPUs checks the server's CPUs against those this process may use,
// and returns the rest, for this process and its workers.
func splitCPUs(list string) (server, rest unix.CPUSet, err error) {
	server, err = parseCPUs(list)
	if err != nil {
		return server, rest, err
	}
	if err := unix.SchedGetaffinity(0, &rest); err != nil {
		return server, rest, fmt.Errorf("--server-cpus: reading this process's CPUs: %w", err)
	}
	for c := range 1024 {
		if !server.IsSet(c) {
			continue
		}
		if !rest.IsSet(c) {
			return server, rest, fmt.Errorf("--server-cpus %q: CPU %d is not one this process may use (%s)", list, c, cpuList(&rest))
		}
		rest.Clear(c)
	}
	if rest.Count() == 0 {
		return server, rest, fmt.Errorf("--server-cpus %q leaves no CPU for fleetbench and its workers", list)
	}
	return server, rest, nil
}

// cpuList writes set as a CPU list.
func cpuList(set *unix.CPUSet) string {
	var b []string
	for c := range 1024 {
		if set.IsSet(c) {
			b = append(b, strconv.Itoa(c))
		}
	}
	return strings.Join(b, ",")
}

// pinProcess sets the CPUs of every thread of process pid (0: this one). A
// thread made while it runs may be missed, so it goes over them twice;
// threads made after it are made by pinned ones, and inherit their CPUs.
func pinProcess(pid int, set *unix.CPUSet) error {
	dir := "/proc/self/task"
	if pid != 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	for range 2 {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("--server-cpus: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("--server-cpus: pinning thread %d of %s: %w", tid, dir, err)
			}
		}
	}
	return nil
}

// pinSelf pins this process to set, with as many Ps as it has CPUs; the
// workers it starts after inherit it.
func pinSelf(set *unix.CPUSet) error {
	if err := pinProcess(0, set); err != nil {
		return err
	}
	runtime.GOMAXPROCS(set.Count())
	return nil
}

// cpuSplit is --server-cpus: the server child's CPUs and the rest.
type cpuSplit struct {
	on           bool
	server, rest unix.CPUSet
}

// pin pins this process to the CPUs --server-cpus leaves it, before it
// starts the server and its workers.
func (m *Main) pin() error {
	if !m.cpus.on {
		return nil
	}
	return pinSelf(&m.cpus.rest)
}

// describe says where the processes run, for the report; "" unpinned.
func (c cpuSplit) describe() string {
	if !c.on {
		return ""
	}
	return "this process and its workers on CPU " + cpuList(&c.rest) + ", the NATS server on CPU " + cpuList(&c.server)
}
