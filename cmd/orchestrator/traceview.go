package main

import (
	"flag"

	"github.com/agentfleet/agentfleet/internal/dashboard"
)

// registerTraceView registers the bounds of the spans kept for the
// dashboard's trace view.
func (m *Main) registerTraceView(fs *flag.FlagSet) {
	fs.IntVar(&m.TraceView.Spans, "trace-view-spans", 10000, "when tracing is on (OTEL_TRACES_EXPORTER), keep the last this many spans in memory for the dashboard's trace view (0 keeps none)")
	fs.Int64Var(&m.TraceView.Bytes, "trace-view-bytes", 8<<20, "bound the bytes of the spans kept for the trace view")
}

// traces is what the dashboard's trace view reads: the spans kept, or nil
// when tracing is off or keeps none.
func (m *Main) traces() dashboard.Traces {
	if r := m.tracer.Recent(); r != nil {
		return r
	}
	return nil
}
