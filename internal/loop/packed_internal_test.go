package loop

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// TestUnpackHistoryRejectsBadBytes checks that the decoder of a packed
// history names what is wrong and where, for every cut of a good one and
// for bytes it never wrote.
func TestUnpackHistoryRejectsBadBytes(t *testing.T) {
	good, err := packHistory(nil, []agentfleet.Message{agentfleet.NewUserMessage("hi"),
		&agentfleet.AssistantMessage{Role: agentfleet.RoleAssistant, Content: []agentfleet.Content{agentfleet.Text("yes")}}},
		[]string{"run-1", "run-1"})
	if err != nil {
		t.Fatal(err)
	}
	h, runs, err := unpackHistory(good)
	if err != nil || len(h) != 2 || runs[0] != "run-1" || runs[1] != "run-1" {
		t.Fatalf("unpack of a good history: %d messages, runs %q, err %v", len(h), runs, err)
	}
	for n := 1; n < len(good); n++ {
		if _, _, err := unpackHistory(good[:n]); err == nil {
			t.Errorf("unpack of the first %d of %d bytes succeeded", n, len(good))
		} else if !strings.Contains(err.Error(), "offset") {
			t.Errorf("unpack of the first %d bytes: %v, which names no offset", n, err)
		}
	}
	for name, b := range map[string][]byte{
		"unknown kind":             {'x', 1, 2, '{', '}'},
		"first message, no run":    {'u', 0, 2, '{', '}'},
		"run id past the end":      {'u', 0xff, 0x01, 'r'},
		"message past the end":     {'u', 1, 0xff, 0x01, '{'},
		"message that is not JSON": {'u', 1, 2, 'n', 'o'},
	} {
		if _, _, err := unpackHistory(b); err == nil {
			t.Errorf("%s: unpack succeeded", name)
		}
	}
}
