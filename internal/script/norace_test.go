//go:build !race

package script

import "time"

// raceSlowdown stretches the time bounds of tests under the race detector;
// without it, none.
const raceSlowdown time.Duration = 1
