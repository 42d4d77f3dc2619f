package cli

import (
	"flag"
	"io"
	"strings"
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
	t.Setenv("NATS_PASSWORD_FILE", "/env.pw")
	t.Setenv("NATS_INBOX_PREFIX", "_INBOX.env")
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
	want := NATSFlags{URL: "nats://env:4222", Creds: "/env.creds", NKey: "/env.nk", User: "envuser", Password: "envpass", Token: "envtoken",
		PasswordFile: "/env.pw", InboxPrefix: "_INBOX.env"}
	if got != want {
		t.Errorf("from the environment: %+v, want %+v", got, want)
	}
	if got := NATSFromEnv("nats://default:4222"); got != want {
		t.Errorf("NATSFromEnv: %+v, want %+v", got, want)
	}
	got = parse("--nats-url", "nats://flag:4222", "--user", "flaguser", "--nats-url", "nats://flag:4222", "--password", "flagpass", "--inbox-prefix", "_INBOX.flag")
	if got.URL != "nats://flag:4222" || got.User != "flaguser" || got.Token != "envtoken" || got.Password != "flagpass" || got.InboxPrefix != "_INBOX.flag" {
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

// TestUsageHidesSecrets: --help prints each flag's default, which comes
// from the environment; the password, the token and the URL's credentials
// are not in it.
func TestUsageHidesSecrets(t *testing.T) {
	t.Setenv("NATS_URL", "nats://alice:UrlS3cret@env:4222")
	t.Setenv("NATS_PASSWORD", "PwS3cret")
	t.Setenv("NATS_TOKEN", "TokS3cret")
	var f NATSFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var usage strings.Builder
	fs.SetOutput(&usage)
	f.Register(fs, "nats://default:4222")
	fs.PrintDefaults()
	for _, secret := range []string{"UrlS3cret", "PwS3cret", "TokS3cret"} {
		if strings.Contains(usage.String(), secret) {
			t.Errorf("the usage shows %s:\n%s", secret, usage.String())
		}
	}
	if !strings.Contains(usage.String(), "nats://alice:xxxxx@env:4222") {
		t.Errorf("the usage does not show the redacted URL:\n%s", usage.String())
	}
	if f.URL != "nats://alice:UrlS3cret@env:4222" || f.Password != "PwS3cret" || f.Token != "TokS3cret" {
		t.Errorf("values %+v, want the environment's", f)
	}
}
