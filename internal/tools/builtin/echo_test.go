package builtin

import (
	"context"
	"errors"
	"testing"
)

func TestEcho(t *testing.T) {
	for _, in := range []string{"hello", "", "multi\nline ünïcode 🙂"} {
		t.Run(in, func(t *testing.T) {
			res, err := run(context.Background(), t, Echo(), map[string]any{"text": in})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(res.Content), 1; got != want {
				t.Fatalf("%d content blocks, want %d", got, want)
			}
			if got, want := res.Content[0].Text, in; got != want {
				t.Errorf("text = %q, want %q", got, want)
			}
		})
	}
}

func TestEchoErrors(t *testing.T) {
	if _, err := run(context.Background(), t, Echo(), map[string]any{"text": true}); err == nil || err.Error() != `echo: argument "text" must be a string, got a boolean` {
		t.Errorf("boolean: error = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := run(ctx, t, Echo(), map[string]any{"text": "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error = %v, want context.Canceled", err)
	}
}
