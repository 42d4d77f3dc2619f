package httpauth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MinTokenLen is the shortest token accepted, in bytes: a shorter one
// could be guessed.
const MinTokenLen = 16

// ErrWeakToken is the error of a token file whose token is empty or
// shorter than MinTokenLen.
var ErrWeakToken = errors.New("token too short")

// ReadToken reads a token file: its content with surrounding white space
// trimmed, which must be at least MinTokenLen bytes. what names the flag
// for the errors, such as "--http-token-file".
func ReadToken(what, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", what, path, err)
	}
	return checkToken(what, path, string(b))
}

func checkToken(what, path, content string) (string, error) {
	tok := strings.TrimSpace(content)
	if len(tok) < MinTokenLen {
		return "", fmt.Errorf("%s %s: %w: it holds %d bytes, want at least %d (make one with: head -c 32 /dev/urandom | base64 > %s)",
			what, path, ErrWeakToken, len(tok), MinTokenLen, path)
	}
	return tok, nil
}

// equal compares a token given with a token configured in constant time
// (for a given length); an empty configured token matches nothing.
func equal(given, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(given), []byte(want)) == 1
}
