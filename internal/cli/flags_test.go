package cli

import (
	"flag"
	"io"
	"testing"
)

// TestNATSFlagsFromEnv: the NATS_ variables are the defaults of the flags,
// and a flag given wins.
func TestNATSFlagsFromEnv(t *testing.T) {
	t.Setenv("NATS_URL", "nats://env:4222")
	t.Setenv("NATS_CREDS", "/env.creds")
	t.Setenv("NATS_NKEY", "/env.nk")
	t.Setenv("NATS_USER", "envuser")
	t.Setenv("NATS_PASSWORD", "envpass")
	t.Setenv("NATS_TOKEN", "envtoken")
	parse := func(args ...string) NATSFlags {
		var f NATSFlags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.Register(fs, "nats://default:4222")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return f
	}
	got := parse()
	want := NATSFlags{URL: "nats://env:4222", Creds: "/env.creds", NKey: "/env.nk", User: "envuser", Password: "envpass", Token: "envtoken"}
	if got != want {
		t.Errorf("from the environment: %+v, want %+v", got, want)
	}
	if got := NATSFromEnv("nats://default:4222"); got != want {
		t.Errorf("NATSFromEnv: %+v, want %+v", got, want)
	}
	got = parse("--nats-url", "nats://flag:4222", "--user", "flaguser", "--nats-url", "nats://flag:4222")
	if got.URL != "nats://flag:4222" || got.User != "flaguser" || got.Token != "envtoken" {
		t.Errorf("flags given: %+v, want them to win", got)
	}
	// An empty flag wins too: the orchestrator's --nats-url "" starts the
	// embedded server despite NATS_URL.
	if got := parse("--nats-url", ""); got.URL != "" {
		t.Errorf(`--nats-url "": URL %q`, got.URL)
	}
	t.Setenv("NATS_URL", "")
	if got := parse(); got.URL != "nats://default:4222" {
		t.Errorf("without NATS_URL: URL %q, want the default", got.URL)
	}
}
