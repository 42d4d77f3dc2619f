package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// BuildBinaries builds nats-server (from the module's dependency),
// orchestrator and toolworker into dir with "go build", run in the module
// that holds the working directory (or a directory inside it), and returns
// dir, ready for Config.BinDir.
func BuildBinaries(ctx context.Context, dir string) (string, error) {
	modDir, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", abs+string(filepath.Separator),
		"github.com/nats-io/nats-server/v2", "./cmd/orchestrator", "./cmd/toolworker")
	cmd.Dir = modDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out.String())
	}
	return abs, nil
}

// moduleRoot finds the root of the agentfleet module with "go list".
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/agentfleet/agentfleet").Output()
	if err != nil {
		return "", fmt.Errorf("build: finding the agentfleet module (run inside it): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
