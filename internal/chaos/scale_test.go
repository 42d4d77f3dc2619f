package chaos

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestScaleOut runs the scale-out scenario (RunScale) against the real
// programs: partitions balanced over two, then three orchestrators; a
// SIGKILLed orchestrator's runs resumed elsewhere within the lease TTL and
// 5 s; a SIGTERMed one handing over and exiting 0; input flowing again
// after the input stream's NATS leader is killed; and a stored state
// without violations. Its figures are logged in one line.
func TestScaleOut(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: real processes; skipped with -short")
	}
	cfg := Config{BinDir: binaries(t), Sessions: 36, LeaseTTL: 2 * time.Second, KeepWorkDir: *flagKeep, Logf: t.Logf, Hog: *flagHog}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := RunScale(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", rep.Line())
	for _, e := range rep.Exits {
		t.Logf("%s exited on its own at %.2fs (%s); the harness restarted it", e.Process, e.AtSec, e.Error)
	}
	for _, f := range rep.Failures {
		t.Error(f)
	}
	if len(rep.Failures) > 0 {
		if rep.Report != nil {
			var out bytes.Buffer
			rep.Report.WriteTables(&out)
			t.Logf("report:\n%s", out.String())
		}
		t.Logf("work dir kept: %s", rep.WorkDir)
	}
}
