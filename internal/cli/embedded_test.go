package cli

import (
	"strings"
	"testing"
)

func TestChooseNATS(t *testing.T) {
	for _, tt := range []struct {
		name      string
		in        NATSChoice
		url, note string
		wantErr   string
	}{
		{"nothing: embedded", NATSChoice{}, "", "", ""},
		{"flag: join", NATSChoice{URL: "nats://a:4222", URLGiven: true}, "nats://a:4222", "", ""},
		{"environment: join", NATSChoice{URL: "nats://a:4222"}, "nats://a:4222", "", ""},
		{"embedded flags beat the environment", NATSChoice{URL: "nats://a:4222", Embedded: []string{"--listen", "--data-dir"}}, "", "--listen and --data-dir given: running the embedded NATS server, not joining $NATS_URL", ""},
		{"embedded flags alone", NATSChoice{Embedded: []string{"--listen"}}, "", "", ""},
		{"two flags conflict", NATSChoice{URL: "nats://a:4222", URLGiven: true, Embedded: []string{"--data-dir"}}, "", "", "--nats-url joins a NATS server, --data-dir is for the embedded one"},
	} {
		url, note, err := ChooseNATS(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || url != tt.url || !strings.Contains(note, tt.note) || (tt.note == "") != (note == "") {
			t.Errorf("%s: (%q, %q, %v), want (%q, %q…)", tt.name, url, note, err, tt.url, tt.note)
		}
	}
}
