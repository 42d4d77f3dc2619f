package bus

import (
	"fmt"
	"strings"
)

// DefaultInboxPrefix is nats.go's own inbox prefix: replies come to
// _INBOX.<random>.
const DefaultInboxPrefix = "_INBOX"

// InboxPrefix returns the inbox prefix of a connection: explicit when it is
// given, after checking it, else _INBOX.<user> for a user whose name is one
// subject token, else DefaultInboxPrefix. The shipped nats.conf lets each
// user subscribe to its own _INBOX.<user>.> only, so that no user reads
// another's replies; a user whose name has a dot, a space or a wildcard
// must be given its prefix explicitly.
//
// An explicit prefix must be DefaultInboxPrefix or start with "_INBOX.":
// the fleet answers only on reply subjects under _INBOX., so a prefix
// elsewhere would never hear back. Its tokens are those ReplyGuard answers:
// letters, digits, '-' and '_'.
func InboxPrefix(explicit, user string) (string, error) {
	if explicit == "" {
		if ValidToken(user) { // a token ReplyGuard answers
			return DefaultInboxPrefix + "." + user, nil
		}
		return DefaultInboxPrefix, nil
	}
	if explicit != DefaultInboxPrefix && !strings.HasPrefix(explicit, DefaultInboxPrefix+".") {
		return "", fmt.Errorf("inbox prefix %q: must be %s or start with %s. (such as %s.alice), since the fleet answers only on reply subjects under %s.", explicit, DefaultInboxPrefix, DefaultInboxPrefix, DefaultInboxPrefix, DefaultInboxPrefix)
	}
	for _, tok := range strings.Split(explicit, ".") {
		switch {
		case tok == "":
			return "", fmt.Errorf("inbox prefix %q: has an empty token (two dots, or a dot at the end)", explicit)
		case tok == "*" || tok == ">" || strings.ContainsAny(tok, "*>"):
			return "", fmt.Errorf("inbox prefix %q: has a wildcard (%q); a prefix names one inbox space", explicit, tok)
		case strings.ContainsAny(tok, " \t\r\n"):
			return "", fmt.Errorf("inbox prefix %q: has white space", explicit)
		case !ValidToken(tok):
			return "", fmt.Errorf("inbox prefix %q: token %q may hold only letters, digits, '-' and '_', or the fleet's replies to it are refused", explicit, tok)
		}
	}
	return explicit, nil
}
