package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
)

// report is the result of one benchmark: printed as JSON, or as tables.
type report interface {
	writeTables(w io.Writer)
}

func printReport(w io.Writer, r report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.writeTables(w)
	return nil
}

// Machine describes where a benchmark ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// Pinned says where the processes ran with --server-cpus; empty
	// when they shared every CPU.
	Pinned string `json:"pinned,omitempty"`
}

func thisMachine() Machine {
	return Machine{
		CPUs: runtime.NumCPU(), CPUModel: cpuModel(), GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH,
	}
}

// cpuModel reads the model name of the first CPU from /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// machine is thisMachine with where the processes run.
func (m *Main) machine() Machine {
	mc := thisMachine()
	mc.Pinned = m.cpus.describe()
	return mc
}

func (m Machine) String() string {
	s := fmt.Sprintf("%d CPUs, %s, %s %s/%s", m.CPUs, m.CPUModel, m.GoVersion, m.OS, m.Arch)
	if m.Pinned != "" {
		s += " (" + m.Pinned + ")"
	}
	return s
}

// Target is one goal of the benchmarks, with the value measured.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured float64 `json:"measured"`
	Met      bool    `json:"met"`
}

func atMost(name string, measured, limit float64, unit string) Target {
	return Target{Name: name, Goal: fmt.Sprintf("<= %g%s", limit, unit), Measured: measured, Met: measured <= limit}
}

func atLeast(name string, measured, limit float64, unit string) Target {
	return Target{Name: name, Goal: fmt.Sprintf(">= %g%s", limit, unit), Measured: measured, Met: measured >= limit}
}

func writeTargets(w io.Writer, ts []Target) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintln(w, "\nTargets")
	tw := table(w)
	fmt.Fprintln(tw, "target\tgoal\tmeasured\tverdict")
	for _, t := range ts {
		verdict := "met"
		if !t.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Name, t.Goal, number(t.Measured), verdict)
	}
	tw.Flush()
}

func table(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// number formats a measured value: three significant digits, but never in
// exponent form.
func number(v float64) string {
	if v >= 1000 || v <= -1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
