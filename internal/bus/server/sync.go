package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Sync says when JetStream's file store writes its data to disk with
// fsync. The zero value, SyncAlways, is the fleet's default: every write of
// a stream (user input, history, approvals, the leases' KV) is synced before
// the server acknowledges it, so that an acknowledged message survives a
// power cut or an OS crash, not only a killed process.
//
// A positive Interval is nats-server's own lazy mode: data is flushed to the
// page cache at once (a killed server loses nothing) but synced to disk only
// every Interval, so a power cut or an OS crash loses what was acknowledged
// in up to the last Interval. nats-server's default is 2m.
type Sync struct {
	// Interval is the time between background syncs; zero means sync
	// every write.
	Interval time.Duration
}

// SyncAlways is the default policy: fsync before every acknowledgement.
var SyncAlways = Sync{}

// Always reports whether every write is synced before it is acknowledged.
func (s Sync) Always() bool { return s.Interval <= 0 }

// String is the policy as ParseSync reads it: "always" or a duration.
func (s Sync) String() string {
	if s.Always() {
		return "always"
	}
	return s.Interval.String()
}

// ParseSync reads a sync policy as nats-server's sync_interval setting
// does: "always" (any case), or a positive Go duration such as "2m" or
// "500ms". The empty string is the default, always. The error names the
// value and says what is accepted.
func ParseSync(v string) (Sync, error) {
	t := strings.TrimSpace(v)
	if t == "" || strings.EqualFold(t, "always") {
		return SyncAlways, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return Sync{}, fmt.Errorf("sync %q: want \"always\" or a duration such as 2m", v)
	}
	if d <= 0 {
		return Sync{}, fmt.Errorf("sync %q: a duration must be positive (or say \"always\")", v)
	}
	return Sync{Interval: d}, nil
}

// apply sets the policy on the server's options.
func (s Sync) apply(opts *server.Options) {
	if s.Always() {
		opts.SyncAlways = true
		// nats-server keeps its background sync as well; leave its
		// default (2m) unless a file set one.
		if opts.SyncInterval <= 0 {
			opts.SyncInterval = defaultLazySync
		}
		return
	}
	opts.SyncAlways = false
	opts.SyncInterval = s.Interval
}

// defaultLazySync is nats-server's own default sync interval.
const defaultLazySync = 2 * time.Minute
