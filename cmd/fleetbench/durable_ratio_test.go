package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestDurableRatio(t *testing.T) {
	// The unloaded run p50 is a tenth of the loaded one throughout.
	round := func(runsPerSec, cpuSelf, cpuWorkers, heap, p50us float64, calls, turns int) *SessionsReport {
		r := &SessionsReport{RunsPerSec: runsPerSec, CPUPerRunSelf: cpuSelf, CPUPerRunWorkers: cpuWorkers, HeapPerSession: heap, Sync: "2m0s"}
		r.RunLatency.P50, r.UnloadedRunLatency.P50 = p50us, p50us/10
		r.Config.CallsPerTurn, r.Config.Turns = calls, turns
		return r
	}
	baseline := round(8881, 170, 35, 5600, 30_000, 1, 2)
	tests := []struct {
		name          string
		mem, dur      *SessionsReport
		runs, cpu     float64 // ratios
		runsMet       bool
		cpuMet        bool
		perCallMs     float64 // unloaded; 0: no comparison
		perCallCPUUs  float64
		perCallVsTemp float64
	}{
		{"today's baseline misses both", baseline, round(2168, 805, 65, 17900, 113_000, 1, 2),
			2168.0 / 8881, 805.0 / 170, false, false, 5.65, 402.5, 5.65 / 25.8},
		{"both met", baseline, round(6500, 240, 40, 6000, 40_000, 1, 2),
			6500.0 / 8881, 240.0 / 170, true, true, 2, 120, 2 / 25.8},
		{"exactly at the targets", round(1000, 100, 10, 1, 1000, 1, 1), round(670, 150, 10, 1, 1000, 1, 1),
			0.67, 1.5, true, true, 0.1, 150, 0.1 / 25.8},
		{"fast but costly", baseline, round(9000, 300, 40, 6000, 20_000, 1, 2),
			9000.0 / 8881, 300.0 / 170, true, false, 1, 150, 1 / 25.8},
		{"parallel calls: a turn is the step", baseline, round(6000, 200, 40, 6000, 30_000, 4, 3),
			6000.0 / 8881, 200.0 / 170, true, true, 1, 200.0 / 12, 1 / 25.8},
		{"no tool calls: no comparison per call", baseline, round(6000, 200, 40, 6000, 30_000, 0, 2),
			6000.0 / 8881, 200.0 / 170, true, true, 0, 0, 0},
		{"an in-memory round that measured nothing meets nothing", round(0, 0, 0, 0, 0, 1, 2), round(2000, 800, 60, 17000, 100_000, 1, 2),
			0, 0, false, false, 5, 400, 5 / 25.8},
		{"a durable round without CPU figures does not meet the CPU target", baseline, round(6000, 0, 0, 6000, 30_000, 1, 2),
			6000.0 / 8881, 0, true, false, 1.5, 0, 1.5 / 25.8},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := durableRatio(tt.mem, tt.dur, false)
			if !near(r.RunsPerSec.Ratio, tt.runs) || !near(r.CPUPerRunSelf.Ratio, tt.cpu) {
				t.Errorf("ratios runs/s %v, CPU %v; want %v, %v", r.RunsPerSec.Ratio, r.CPUPerRunSelf.Ratio, tt.runs, tt.cpu)
			}
			if len(r.Targets) != 2 {
				t.Fatalf("targets = %+v, want two", r.Targets)
			}
			if got := [2]bool{r.Targets[0].Met, r.Targets[1].Met}; got != [2]bool{tt.runsMet, tt.cpuMet} {
				t.Errorf("targets met (runs/s, CPU) = %v, want %v: %+v", got, [2]bool{tt.runsMet, tt.cpuMet}, r.Targets)
			}
			if r.Sync != "2m0s" {
				t.Errorf("sync = %q, want the durable round's", r.Sync)
			}
			// Every figure encodes: no NaN or infinity from a zero round.
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("encode: %v", err)
			}
			p := r.PerToolCall
			if tt.perCallMs == 0 {
				if p != nil {
					t.Errorf("per tool call = %+v, want none", p)
				}
				return
			}
			if p == nil {
				t.Fatal("no comparison per tool call")
			}
			if !near(p.LoadedMs, tt.perCallMs*10) {
				t.Errorf("per tool call under load = %v ms, want %v", p.LoadedMs, tt.perCallMs*10)
			}
			if !near(p.DurableMs, tt.perCallMs) || !near(p.CPUSelfUs, tt.perCallCPUUs) || !near(p.Ratio, tt.perCallVsTemp) || p.TemporalMs != 25.8 {
				t.Errorf("per tool call = %+v, want %v ms (%v× Temporal), %v µs", p, tt.perCallMs, tt.perCallVsTemp, tt.perCallCPUUs)
			}
		})
	}
}

func TestDurableRatioTables(t *testing.T) {
	mem := &SessionsReport{RunsPerSec: 8881, CPUPerRunSelf: 170, CPUPerRunWorkers: 35, HeapPerSession: 5600}
	dur := &SessionsReport{RunsPerSec: 2168, CPUPerRunSelf: 805, CPUPerRunWorkers: 65, HeapPerSession: 17900, Sync: "always"}
	dur.RunLatency.P50, dur.UnloadedRunLatency.P50 = 113_000, 3000
	dur.Config.CallsPerTurn, dur.Config.Turns = 1, 2
	var b strings.Builder
	durableRatio(mem, dur, false).writeTables(&b)
	for _, want := range []string{"sync always", "runs/s", "0.24×", "4.74×", "CPU/run µs, workers", "heap per idle session KB",
		"Temporal's 25.8 ms", "1.50 ms (run p50 one at a time, per turn)", "one at a time", "MISSED", ">= 0.67×", "<= 1.5×"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, b.String())
		}
	}
}

func TestDurableRatioServerCPU(t *testing.T) {
	// round is a round whose server CPU per run is srv, measured or not.
	round := func(self, srv float64, measured bool) *SessionsReport {
		return &SessionsReport{RunsPerSec: 1000, CPUPerRunSelf: self, CPUPerRunServer: srv, ServerCPU: measured}
	}
	tests := []struct {
		name     string
		mem, dur *SessionsReport
		apart    bool
		self     float64 // ratio of this process, the target's figure
		srv, sum Compared
		cpuMet   bool
	}{
		{"embedded: the server is in this process, nothing apart", round(190, 0, false), round(800, 0, false),
			false, 800.0 / 190, Compared{}, Compared{}, false},
		{"process: the target is on the orchestrator and driver, the server beside it", round(190, 60, true), round(280, 400, true),
			true, 280.0 / 190, Compared{60, 400, 400.0 / 60}, Compared{250, 680, 680.0 / 250}, true},
		{"process: a costly orchestrator misses though the server is cheap", round(190, 60, true), round(400, 70, true),
			true, 400.0 / 190, Compared{60, 70, 70.0 / 60}, Compared{250, 470, 470.0 / 250}, false},
		{"an in-memory server that used no CPU gives no server ratio", round(190, 0, true), round(250, 300, true),
			true, 250.0 / 190, Compared{0, 300, 0}, Compared{190, 550, 550.0 / 190}, true},
		{"measured in one round only: not apart", round(190, 60, true), round(800, 0, false),
			false, 800.0 / 190, Compared{}, Compared{}, false},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	same := func(a, b Compared) bool {
		return near(a.InMemory, b.InMemory) && near(a.Durable, b.Durable) && near(a.Ratio, b.Ratio)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := durableRatio(tt.mem, tt.dur, false)
			if r.ServerCPU != tt.apart {
				t.Fatalf("server CPU measured apart = %v, want %v", r.ServerCPU, tt.apart)
			}
			if !near(r.CPUPerRunSelf.Ratio, tt.self) {
				t.Errorf("CPU ratio of this process = %v, want %v", r.CPUPerRunSelf.Ratio, tt.self)
			}
			if got := r.Targets[1]; got.Met != tt.cpuMet || !near(got.Measured, tt.self) || got.Name != cpuTargetName(tt.apart, false) {
				t.Errorf("CPU target = %+v, want met %v at %v named %q", got, tt.cpuMet, tt.self, cpuTargetName(tt.apart, false))
			}
			if !tt.apart {
				if r.CPUPerRunServer != nil || r.CPUPerRunSelfAndServer != nil {
					t.Errorf("server figures %+v, %+v; want none", r.CPUPerRunServer, r.CPUPerRunSelfAndServer)
				}
				return
			}
			if r.CPUPerRunServer == nil || !same(*r.CPUPerRunServer, tt.srv) {
				t.Errorf("server CPU per run = %+v, want %+v", r.CPUPerRunServer, tt.srv)
			}
			if r.CPUPerRunSelfAndServer == nil || !same(*r.CPUPerRunSelfAndServer, tt.sum) {
				t.Errorf("CPU per run of both = %+v, want %+v", r.CPUPerRunSelfAndServer, tt.sum)
			}
			var b strings.Builder
			r.writeTables(&b)
			for _, want := range []string{"orchestrator + driver", "CPU/run µs, NATS server", "CPU/run µs, both", "NATS server apart"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("tables lack %q:\n%s", want, b.String())
				}
			}
		})
	}
}

// TestCPUTargetNames names the CPU target by where the server ran: apart
// and measured, external and not measured, or in this process.
func TestCPUTargetNames(t *testing.T) {
	for _, c := range []struct {
		apart, external bool
		want            string
	}{
		{true, false, "NATS server apart"},
		{false, true, "external NATS server not measured"},
		{false, false, "with the NATS server in it"},
	} {
		mem := &SessionsReport{RunsPerSec: 1000, CPUPerRunSelf: 190, CPUPerRunServer: 60, ServerCPU: c.apart}
		dur := &SessionsReport{RunsPerSec: 500, CPUPerRunSelf: 250, CPUPerRunServer: 300, ServerCPU: c.apart}
		if got := durableRatio(mem, dur, c.external).Targets[1].Name; !strings.Contains(got, c.want) {
			t.Errorf("apart %v, external %v: target %q, want one saying %q", c.apart, c.external, got, c.want)
		}
	}
}
