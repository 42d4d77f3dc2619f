package bus_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentfleet/agentfleet"

// goList runs go list with format f over pkgs and returns its lines.
func goList(t *testing.T, f string, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", f}, pkgs...)...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %v: %v\n%s", pkgs, err, ee.Stderr)
		}
		t.Fatalf("go list %v: %v", pkgs, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestImportRules holds the rules the packages of internal/bus state in
// their doc comments: the base imports nothing of the fleet but the one
// retry (internal/retry, itself only the standard library), only the
// embedded server (and the test helper) links nats-server, the codec holds
// no connection, nothing under internal/bus reaches up into the pipeline,
// the loop or the orchestrator, not even through another package, and the
// programs that only connect do not link nats-server.
func TestImportRules(t *testing.T) {
	const server = "github.com/nats-io/nats-server/v2/server"
	core := []string{module + "/internal/pipeline", module + "/internal/loop", module + "/internal/orchestrator"}
	for _, line := range goList(t, `{{.ImportPath}} {{join .Imports " "}}`, module+"/internal/bus/...") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		rel := strings.TrimPrefix(pkg, module+"/")
		for _, imp := range imports {
			switch {
			case rel == "internal/bus" && strings.HasPrefix(imp, module) && imp != module+"/internal/retry":
				t.Errorf("%s imports %s: the base of the transport imports nothing of the fleet but the retry", rel, imp)
			case strings.HasPrefix(imp, module+"/internal/pipeline") || strings.HasPrefix(imp, module+"/internal/loop") || strings.HasPrefix(imp, module+"/internal/orchestrator"):
				t.Errorf("%s imports %s: the transport does not reach up into the agent core", rel, imp)
			case rel == "internal/bus/wire" && strings.HasPrefix(imp, "github.com/nats-io/"):
				t.Errorf("%s imports %s: the codec holds no connection", rel, imp)
			}
		}
		deps := goList(t, `{{join .Deps "\n"}}`, pkg)
		for _, c := range core {
			if slices.Contains(deps, c) {
				t.Errorf("%s depends on %s: the transport does not reach up into the agent core, not even through another package", rel, c)
			}
		}
		if rel == "internal/bus/server" || rel == "internal/bus/bustest" {
			continue
		}
		if slices.Contains(deps, server) {
			t.Errorf("%s links nats-server; only internal/bus/server may", rel)
		}
	}
	for _, cmd := range []string{"cmd/agentctl", "cmd/toolworker"} {
		if deps := goList(t, `{{join .Deps "\n"}}`, module+"/"+cmd); slices.Contains(deps, server) {
			t.Errorf("%s links nats-server", cmd)
		}
	}
}
