package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/script"
)

// scriptWorkerProbeTimeout bounds the probe for a script worker: a worker
// answers a probe's dry run in milliseconds.
const scriptWorkerProbeTimeout = 5 * time.Second

// scriptWorkerProbe is the definition whose dry run asks whether a script
// worker is there: it does nothing, so that any worker runs it at once.
var scriptWorkerProbe = &script.Definition{
	Name:        "agentctl_probe",
	Label:       "Probe",
	Description: "agentctl asks whether a script worker answers.",
	InputSchema: json.RawMessage(`{"type":"object"}`),
	Code:        "def execute(args):\n    return \"\"\n",
}

// scriptWorkerWarning returns "" when a script worker of the fleet's
// prefix answers a dry run, and otherwise a warning that says why the
// stored tool name is not served and what to start. A stored tool is
// served only by the workers that run scripts (toolworker --scripts, the
// orchestrator's in-process workers), whatever the bucket holds: asking
// one to run a dry run, on the subject every one of them answers, is
// what tells that one is there (the $SRV.INFO of the workers' services
// would not, since a worker without --scripts answers it too).
func (m *Main) scriptWorkerWarning(ctx context.Context, name string) string {
	ctx, cancel := context.WithTimeout(ctx, scriptWorkerProbeTimeout)
	defer cancel()
	subject := scriptfleet.DryRunSubject(m.subjects.Prefix)
	err := scriptfleet.RemoteDryRun(m.conn.NATS(), m.subjects.Prefix).DryRun(ctx, scriptWorkerProbe)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, scriptfleet.ErrNoScriptWorker):
		return fmt.Sprintf("no script worker answers on %s, so no worker serves %s yet and write_tool fails: start a tool worker with --scripts (or the orchestrator with --workers N and JetStream), which serves it within a second", subject, name)
	default:
		return fmt.Sprintf("could not tell whether a script worker serves %s: a dry run on %s: %v", name, subject, err)
	}
}
