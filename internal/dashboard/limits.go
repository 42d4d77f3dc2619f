package dashboard

import (
	"flag"
	"time"
)

// Limits bound what the event streams of the pages may cost the process.
// The zero value of a field means its default.
type Limits struct {
	// MaxClients is how many event streams may be open at once; one more
	// is answered 503 with Retry-After. Default DefaultMaxClients.
	MaxClients int
	// MaxReplay is how far back a page may ask to replay (?since=); a
	// page that asks further is answered 400. Default DefaultMaxReplay.
	MaxReplay time.Duration
	// MaxReplayBytes bounds the bytes of events one replay sends; at the
	// bound the replay stops with a notice and the page goes on live.
	// Default DefaultMaxReplayBytes.
	MaxReplayBytes int64
}

// The defaults of Limits.
const (
	DefaultMaxClients     = 64
	DefaultMaxReplay      = 24 * time.Hour
	DefaultMaxReplayBytes = 32 << 20
)

// LimitFlagNames are the names of the flags Limits.Register adds.
var LimitFlagNames = []string{"dashboard-max-clients", "dashboard-max-replay", "dashboard-max-replay-bytes"}

// Register adds --dashboard-max-clients, --dashboard-max-replay and
// --dashboard-max-replay-bytes to fs.
func (l *Limits) Register(fs *flag.FlagSet) {
	fs.IntVar(&l.MaxClients, "dashboard-max-clients", DefaultMaxClients, "event streams of dashboard pages open at once; one more is answered 503")
	fs.DurationVar(&l.MaxReplay, "dashboard-max-replay", DefaultMaxReplay, "how far back a dashboard page may replay events (?since=); further is answered 400")
	fs.Int64Var(&l.MaxReplayBytes, "dashboard-max-replay-bytes", DefaultMaxReplayBytes, "bytes of events one page's replay may send; past them the replay stops with a notice and the page goes on live")
}

func (l Limits) withDefaults() Limits {
	if l.MaxClients <= 0 {
		l.MaxClients = DefaultMaxClients
	}
	if l.MaxReplay <= 0 {
		l.MaxReplay = DefaultMaxReplay
	}
	if l.MaxReplayBytes <= 0 {
		l.MaxReplayBytes = DefaultMaxReplayBytes
	}
	return l
}
