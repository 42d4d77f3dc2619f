package scripts

import (
	"os"
	"testing"
)

// TestMain lets this test binary be the child process that process
// isolation starts.
func TestMain(m *testing.M) {
	RunChildIfRequested()
	os.Exit(m.Run())
}
