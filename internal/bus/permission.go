package bus

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// CanPublish reports whether the server lets nc publish on subject. It
// publishes an empty message on subject and makes a round trip: a
// permission violation is reported before the round trip ends. The caller
// chooses a subject that nobody acts on but that the same permissions
// govern as the ones it means (such as <prefix>.in.<one token>, which no
// orchestrator subscribes). A refusal counts as an answer, not an error;
// err is set only when the round trip fails.
func CanPublish(nc *nats.Conn, subject string) (bool, error) {
	// The refusal arrives on the connection's error handler, after this
	// returns perhaps; keep it from the log for good, it is expected.
	prev := nc.ErrorHandler()
	nc.SetErrorHandler(func(c *nats.Conn, s *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) && ContainsQuoted(err.Error(), subject) {
			return
		}
		if prev != nil {
			prev(c, s, err)
		}
	})
	if err := nc.Publish(subject, nil); err != nil {
		return false, fmt.Errorf("publish on %s: %w", subject, err)
	}
	if err := nc.FlushTimeout(FlushWait); err != nil {
		return false, fmt.Errorf("NATS: %w", err)
	}
	err := nc.LastError()
	if errors.Is(err, nats.ErrPermissionViolation) && ContainsQuoted(err.Error(), subject) {
		return false, nil
	}
	return true, nil
}

// FlushWait bounds a round trip to the server.
const FlushWait = 5 * time.Second

// ContainsQuoted reports whether a server error names subject (in quotes,
// as permission violations do).
func ContainsQuoted(s, subject string) bool { return strings.Contains(s, `"`+subject+`"`) }
