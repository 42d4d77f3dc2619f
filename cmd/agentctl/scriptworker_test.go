package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/scriptfleet"
	"github.com/agentfleet/agentfleet/internal/worker"
)

// TestToolsImportWithoutScriptWorker: with the bucket there but no worker
// that runs scripts, import stores the tool and warns, on stderr and in
// its JSON, that nothing serves it and what to start; once a script
// worker runs, import says nothing more and the tool is served.
func TestToolsImportWithoutScriptWorker(t *testing.T) {
	s := bustest.MustRunNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The bucket, as an orchestrator with JetStream creates it, and a
	// worker without --scripts, which answers $SRV.INFO but serves no
	// scripted tool.
	if _, err := scriptfleet.NewStore(ctx, bustest.MustConnect(t, s), scriptfleet.StoreConfig{}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	plain, err := worker.Start(bustest.MustConnect(t, s), worker.Config{Logger: quiet, Tools: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Stop()
	url := s.ClientURL()

	file := writeFile(t, "adder.json", adderV1)
	stdout, stderr, err := run(t, url, "tools", "import", file)
	if err != nil {
		t.Fatalf("import: %v (stderr %s)", err, stderr)
	}
	if want := "Tool adder imported (revision 1), stored but not served: no script worker\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	for _, want := range []string{"warning: no script worker answers on agent.scripts.dryrun", "no worker serves adder", "--scripts"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	stdout, _, err = run(t, url, "tools", "import", "--json", "--replace", file)
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ Warning string }
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || !strings.Contains(out.Warning, "no script worker") {
		t.Errorf("--json = %s (%v), want a warning", stdout, err)
	}

	w, err := worker.Start(bustest.MustConnect(t, s), worker.Config{Logger: quiet, Tools: []string{"echo"}, Scripts: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	stdout, stderr, err = run(t, url, "tools", "import", "--replace", writeFile(t, "adder2.json", adderV2))
	if err != nil || stdout != "Tool adder imported (revision 3)\n" || stderr != "" {
		t.Errorf("with a script worker: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	bustest.Eventually(t, "the script worker to serve adder", func() bool {
		out, _, err := run(t, url, "call", "adder", `{"a":40,"b":2}`)
		return err == nil && strings.Contains(out, "sum: 42")
	})
}
