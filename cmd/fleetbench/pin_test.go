package main

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestParseCPUs reads CPU lists as taskset -c takes them.
func TestParseCPUs(t *testing.T) {
	for _, c := range []struct {
		list, want string
	}{
		{"1", "1"}, {"0,2", "0,2"}, {"2-4", "2,3,4"}, {"0,3-4,7", "0,3,4,7"}, {"5-5", "5"},
	} {
		set, err := parseCPUs(c.list)
		if err != nil {
			t.Fatalf("%q: %v", c.list, err)
		}
		if got := cpuList(&set); got != c.want {
			t.Errorf("%q read as %s, want %s", c.list, got, c.want)
		}
	}
	for _, bad := range []string{"", "a", "-1", "1-", "2-1", "1,,2", "1024", "0-2000"} {
		if _, err := parseCPUs(bad); err == nil {
			t.Errorf("%q read as a CPU list", bad)
		}
	}
}

// TestPinProcess pins every thread of a child process to one CPU, as
// --server-cpus pins the nats-server child, and reads the CPUs its threads
// may use back from the kernel.
func TestPinProcess(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	if mine.Count() < 2 {
		t.Skip("one CPU: nothing to pin apart")
	}
	cpu := -1
	for c := 1023; c >= 0 && cpu < 0; c-- {
		if mine.IsSet(c) {
			cpu = c
		}
	}
	server, rest, err := splitCPUs(strconv.Itoa(cpu))
	if err != nil {
		t.Fatal(err)
	}
	if rest.IsSet(cpu) || rest.Count() != mine.Count()-1 {
		t.Fatalf("the rest of %s without %d is %s", cpuList(&mine), cpu, cpuList(&rest))
	}
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	if err := pinProcess(child.Process.Pid, &server); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(child.Process.Pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(child.Process.Pid) + "/task/" + task.Name() + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != strconv.Itoa(cpu) {
				t.Errorf("thread %s of the child may use CPUs %s, want %d", task.Name(), strings.TrimSpace(v), cpu)
			}
		}
	}
}
