package proc

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestHogBusiesEveryCoreAndStops starts the hog: one running child per
// core, gone (reaped) once stopped; a second stop does nothing.
func TestHogBusiesEveryCoreAndStops(t *testing.T) {
	stop, err := StartHog()
	if err != nil {
		t.Fatal(err)
	}
	children := func() int {
		n := 0
		ents, _ := os.ReadDir("/proc")
		me := strconv.Itoa(os.Getpid())
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
			if len(f) > 1 && f[1] == me {
				n++
			}
		}
		return n
	}
	if runtime.GOOS == "linux" {
		if got, want := children(), runtime.NumCPU(); got != want {
			t.Errorf("%d children while the hog runs, want %d (one per core)", got, want)
		}
	}
	stop()
	stop()
	if runtime.GOOS == "linux" {
		if got := children(); got != 0 {
			t.Errorf("%d children after the hog stopped", got)
		}
	}
}
