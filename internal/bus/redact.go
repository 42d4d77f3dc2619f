package bus

import (
	"net/url"
	"strings"
)

// Redacted is what RedactURL puts in place of a password or a token.
const Redacted = "xxxxx"

// RedactURL returns the NATS server URL or comma-separated list of URLs
// raw, fit for an error or a log line: the password of each
// user:password@ is replaced by Redacted, and so is a lone token@ (a NATS
// URL with a user name and no password carries a token). A URL that does
// not parse keeps its scheme and host only where they can be found, and
// its credentials never: everything before the last @ of the authority is
// replaced.
func RedactURL(raw string) string {
	if !strings.Contains(raw, "@") {
		return raw
	}
	parts := strings.Split(raw, ",")
	for i, p := range parts {
		parts[i] = redactOne(p)
	}
	return strings.Join(parts, ",")
}

// redactOne redacts one URL of a list.
func redactOne(p string) string {
	if !strings.Contains(p, "@") {
		return p
	}
	lead := len(p) - len(strings.TrimLeft(p, " "))
	u, err := url.Parse(strings.TrimSpace(p))
	if err == nil && u.User != nil && u.Opaque == "" {
		if _, hasPassword := u.User.Password(); hasPassword {
			u.User = url.UserPassword(u.User.Username(), Redacted)
		} else {
			u.User = url.User(Redacted)
		}
		return p[:lead] + u.String()
	}
	// Unparsable (a bad port, a bad escape): cut out what precedes the
	// host, whatever it is.
	scheme, rest, ok := strings.Cut(p, "://")
	if !ok {
		scheme, rest = "", p
	}
	authority, path, _ := strings.Cut(rest, "/")
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return p
	}
	out := Redacted + authority[at:]
	if ok {
		out = scheme + "://" + out
	}
	if strings.Contains(rest, "/") {
		out += "/" + path
	}
	return out
}

// urlSecrets returns the passwords and tokens that raw carries, longest
// first, for scrubbing them from text that quotes the URL in its own way
// (a parse error quotes it whole).
func urlSecrets(raw string) []string {
	var out []string
	for _, p := range strings.Split(raw, ",") {
		_, rest, ok := strings.Cut(strings.TrimSpace(p), "://")
		if !ok {
			rest = p
		}
		authority, _, _ := strings.Cut(rest, "/")
		at := strings.LastIndex(authority, "@")
		if at <= 0 {
			continue
		}
		user, pass, hasPass := strings.Cut(authority[:at], ":")
		secret := user // a token
		if hasPass {
			secret = pass
		}
		if secret != "" {
			out = append(out, secret)
			if dec, err := url.PathUnescape(secret); err == nil && dec != secret {
				out = append(out, dec)
			}
		}
	}
	return out
}

// redactedError is an error whose text has the secrets of a URL removed; it
// still unwraps to the original, for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err with every secret of the URL raw replaced by
// Redacted in its text: nats.go's and net/url's errors may quote the URL
// as it was given.
func redactError(err error, raw string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range urlSecrets(raw) {
		msg = strings.ReplaceAll(msg, s, Redacted)
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
