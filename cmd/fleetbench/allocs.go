package main

import (
	"runtime/metrics"
	"time"
)

// allocMeter reads what this process has allocated so far and the CPU its
// garbage collector has spent (runtime/metrics, which stops nothing): the
// share of a run's CPU that allocation costs, steady whatever else runs on
// the machine.
type allocMeter struct{ samples []metrics.Sample }

func newAllocMeter() *allocMeter {
	return &allocMeter{samples: []metrics.Sample{
		{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}, {Name: "/cpu/classes/gc/total:cpu-seconds"},
	}}
}

// allocs is one reading of an allocMeter.
type allocs struct {
	bytes, objects uint64
	gc             time.Duration
}

func (m *allocMeter) read() allocs {
	metrics.Read(m.samples)
	var a allocs
	if v := m.samples[0].Value; v.Kind() == metrics.KindUint64 {
		a.bytes = v.Uint64()
	}
	if v := m.samples[1].Value; v.Kind() == metrics.KindUint64 {
		a.objects = v.Uint64()
	}
	if v := m.samples[2].Value; v.Kind() == metrics.KindFloat64 {
		a.gc = time.Duration(v.Float64() * float64(time.Second))
	}
	return a
}

// sub returns a-b.
func (a allocs) sub(b allocs) allocs {
	return allocs{bytes: a.bytes - b.bytes, objects: a.objects - b.objects, gc: a.gc - b.gc}
}

func (a allocs) add(b allocs) allocs {
	return allocs{bytes: a.bytes + b.bytes, objects: a.objects + b.objects, gc: a.gc + b.gc}
}
