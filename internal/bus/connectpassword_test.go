package bus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConnectPassword(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "s3cret\n")
	empty := write("empty", " \n")
	tests := []struct {
		name, password, file, want, err string
	}{
		{name: "password", password: "p", want: "p"},
		{name: "file", file: good, want: "s3cret"},
		{name: "both", password: "p", file: good, err: "both a password and a password file"},
		{name: "empty file", file: empty, err: "is empty"},
		{name: "missing file", file: filepath.Join(dir, "missing"), err: "password file: open "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := connectPassword(tt.password, tt.file)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("= %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
