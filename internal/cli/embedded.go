package cli

import (
	"fmt"
	"strings"
)

// NATSChoice is what a command that can run its own NATS server is given:
// the URL and where it came from, and which of the embedded server's flags
// were given on the command line.
type NATSChoice struct {
	// URL is --nats-url's value, from the command line or $NATS_URL;
	// empty: neither.
	URL string
	// URLGiven is whether the command line gave --nats-url.
	URLGiven bool
	// Embedded lists the embedded server's flags given on the command
	// line (such as "--listen", "--data-dir").
	Embedded []string
}

// ChooseNATS decides between joining a NATS server and running the
// embedded one, where a flag given beats the environment: it returns the
// URL to join ("" to run the embedded server) and a note for the log when
// the environment was overruled. --nats-url given together with an
// embedded server's flag is a conflict between two flags, an error.
func ChooseNATS(c NATSChoice) (url, note string, err error) {
	switch {
	case c.URL == "":
		return "", "", nil
	case len(c.Embedded) == 0:
		return c.URL, "", nil
	case c.URLGiven:
		verb := "is"
		if len(c.Embedded) > 1 {
			verb = "are"
		}
		return "", "", fmt.Errorf("--nats-url joins a NATS server, %s %s for the embedded one: give one or the other", strings.Join(c.Embedded, " and "), verb)
	}
	return "", fmt.Sprintf("%s given: running the embedded NATS server, not joining $NATS_URL (a flag beats the environment; unset NATS_URL, or give --nats-url, to join it)", strings.Join(c.Embedded, " and ")), nil
}
