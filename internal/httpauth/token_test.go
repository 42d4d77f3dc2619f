package httpauth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "  0123456789abcdef0123\n")
	if tok, err := ReadToken("--http-token-file", good); err != nil || tok != "0123456789abcdef0123" {
		t.Fatalf("ReadToken = %q, %v; want the trimmed token", tok, err)
	}
	for name, content := range map[string]string{"empty": "", "blank": " \n\t\n", "short": "s3cret\n"} {
		p := write(name, content)
		_, err := ReadToken("--http-token-file", p)
		if !errors.Is(err, ErrWeakToken) || !contains(err.Error(), "--http-token-file "+p) || !contains(err.Error(), "at least 16") {
			t.Errorf("%s token: err = %v, want ErrWeakToken naming the flag, the file and the bound", name, err)
		}
	}
	if _, err := ReadToken("--http-token-file", filepath.Join(dir, "missing")); err == nil || !contains(err.Error(), "missing") {
		t.Errorf("missing file: err = %v", err)
	}
}
