//go:build race

package script

import "time"

// raceSlowdown stretches the time bounds of tests under the race detector,
// which instruments every byte a large copy moves: copying the 64 MiB a
// budget allows takes it hundreds of milliseconds.
const raceSlowdown time.Duration = 5
