package agentfleet_test

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"
)

// composeFile is the part of docker-compose.yml that the tests read.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		Environment string `yaml:"environment"`
		File        string `yaml:"file"`
	} `yaml:"secrets"`
}

type composeService struct {
	Build       any               `yaml:"build"`
	Image       string            `yaml:"image"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	Secrets     []string          `yaml:"secrets"`
	Profiles    []string          `yaml:"profiles"`
	Deploy      struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
}

func loadCompose(t *testing.T) *composeFile {
	t.Helper()
	data, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return &c
}

// natsConfigOf returns the configuration file of a nats-server command
// line, "" when there is none.
func natsConfigOf(cmd []string) string {
	for i, a := range cmd {
		if (a == "-c" || a == "--config") && i+1 < len(cmd) {
			return cmd[i+1]
		}
	}
	return ""
}

// flagValue returns the value that follows name in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// loopback reports whether the listen address addr (host:port, or :port
// for every interface) is on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// passwordVarRE finds the environment references of a nats-server
// configuration's passwords.
var passwordVarRE = regexp.MustCompile(`password:\s*\$([A-Z0-9_]+)`)

// checkNATSUsers checks the users of a nats-server configuration: exactly
// want, each subscribing to its own inbox space only and to no other
// inbox, and, when env is given, each with the password of its environment
// variable (no literal in the file).
func checkNATSUsers(t *testing.T, where string, opts *server.Options, want []string, env map[string]string) {
	t.Helper()
	var got []string
	for _, u := range opts.Users {
		got = append(got, u.Username)
		if u.Password == "" {
			t.Errorf("%s: user %s has no password", where, u.Username)
		}
		if env != nil {
			v := "NATS_" + strings.ToUpper(u.Username) + "_PASSWORD"
			if u.Password != env[v] {
				t.Errorf("%s: user %s's password is not $%s: a literal in the file, or another user's", where, u.Username, v)
			}
		}
		if u.Permissions == nil || u.Permissions.Subscribe == nil {
			t.Errorf("%s: user %s has no subscribe permissions: it may read every inbox", where, u.Username)
			continue
		}
		own := "_INBOX." + u.Username + ".>"
		hasOwn := false
		for _, s := range u.Permissions.Subscribe.Allow {
			first, _, _ := strings.Cut(s, ".")
			switch {
			case s == own:
				hasOwn = true
			case first == "_INBOX" || first == "*" || first == ">":
				t.Errorf("%s: user %s may subscribe to %s, beyond its own inbox space %s", where, u.Username, s, own)
			}
		}
		if !hasOwn {
			t.Errorf("%s: user %s may not subscribe to its own inbox space %s", where, u.Username, own)
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: users %v, want %v", where, got, want)
	}
}

// TestNATSConfigUsers: every shipped nats-server configuration has users,
// each reading its own inbox space only; those of compose take their
// passwords from the environment.
func TestNATSConfigUsers(t *testing.T) {
	opts, err := server.ProcessConfigFile(filepath.Join("deploy", "nats", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	checkNATSUsers(t, "deploy/nats/nats.conf", opts, []string{"orchestrator", "toolworker", "standalone", "client", "dashboard", "alice", "bob"}, nil)
	if opts.NoAuthUser != "" {
		t.Errorf("deploy/nats/nats.conf lets anonymous clients in as %s", opts.NoAuthUser)
	}

	conf := filepath.Join("deploy", "nats", "compose.conf")
	data, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, m := range passwordVarRE.FindAllStringSubmatch(string(data), -1) {
		env[m[1]] = "sentinel-of-" + m[1]
		t.Setenv(m[1], env[m[1]])
	}
	if opts, err = server.ProcessConfigFile(conf); err != nil {
		t.Fatal(err)
	}
	checkNATSUsers(t, conf, opts, []string{"orchestrator", "toolworker", "client", "dashboard"}, env)

	// The nats service of compose sets every one of those variables from
	// the environment of docker compose, and refuses to start without.
	nats := loadCompose(t).Services["nats"]
	for v := range env {
		if got := nats.Environment[v]; !strings.HasPrefix(got, "${"+v+":?") {
			t.Errorf("compose: nats sets %s to %q, want ${%s:?…} (required, from .env)", v, got, v)
		}
	}
	for _, f := range []string{"compose.conf", "roles.conf"} {
		if !slices.ContainsFunc(nats.Volumes, func(v string) bool { return strings.HasPrefix(v, "./deploy/nats/"+f+":/etc/nats/"+f) }) {
			t.Errorf("compose: nats does not mount deploy/nats/%s in /etc/nats", f)
		}
	}
}

// TestComposeSecurity: compose publishes ports on the host's loopback only,
// every service that connects to NATS has a user whose password is a
// secret file (never a literal, never on the command line), and the
// orchestrator's HTTP listener, on every interface of its container, has
// its tokens from secrets.
func TestComposeSecurity(t *testing.T) {
	c := loadCompose(t)
	data, _ := os.ReadFile(filepath.Join("deploy", "nats", "compose.conf"))
	users := regexp.MustCompile(`\{user:\s*([a-z0-9_-]+)`).FindAllStringSubmatch(string(data), -1)
	known := map[string]bool{}
	for _, u := range users {
		known[u[1]] = true
	}
	secretFile := func(name string, svc composeService, path, what string) {
		t.Helper()
		secret, ok := strings.CutPrefix(path, "/run/secrets/")
		if !ok || !slices.Contains(svc.Secrets, secret) {
			t.Errorf("compose: %s: %s is %q, not the file of one of its secrets %v", name, what, path, svc.Secrets)
			return
		}
		if def, ok := c.Secrets[secret]; !ok || def.Environment == "" && def.File == "" {
			t.Errorf("compose: secret %s is not defined from the environment or a file", secret)
		}
	}
	for name, svc := range c.Services {
		for _, p := range svc.Ports {
			if addr := composeDefault(p); !strings.HasPrefix(addr, "127.0.0.1:") {
				t.Errorf("compose: %s publishes %q (%s unless the shell says otherwise) on every interface of the host; want 127.0.0.1:…", name, p, addr)
			}
		}
		for _, a := range svc.Command {
			if a == "--password" || a == "--token" || strings.HasPrefix(a, "--password=") || strings.HasPrefix(a, "--token=") {
				t.Errorf("compose: %s has a secret on its command line: %v", name, svc.Command)
			}
		}
		for _, v := range []string{"NATS_PASSWORD", "NATS_TOKEN", "AGENTFLEET_HTTP_TOKEN"} {
			if _, ok := svc.Environment[v]; ok {
				t.Errorf("compose: %s has %s in its environment; give a secret file", name, v)
			}
		}
		url, ok := flagValue(svc.Command, "--nats-url")
		if !ok {
			continue
		}
		if strings.Contains(url, "@") {
			t.Errorf("compose: %s has credentials in its --nats-url %s", name, url)
		}
		user := svc.Environment["NATS_USER"]
		if !known[user] {
			t.Errorf("compose: %s connects to NATS as %q, not a user of compose.conf %v", name, user, known)
		}
		secretFile(name, svc, svc.Environment["NATS_PASSWORD_FILE"], "NATS_PASSWORD_FILE")
		if slices.Equal(svc.Entrypoint, []string{"/usr/local/bin/orchestrator"}) {
			addr, _ := flagValue(svc.Command, "--http")
			if slices.Contains(svc.Command, "--insecure-http") {
				t.Errorf("compose: %s runs with --insecure-http", name)
			}
			if !loopback(addr) {
				secretFile(name, svc, svc.Environment["AGENTFLEET_HTTP_TOKEN_FILE"], "AGENTFLEET_HTTP_TOKEN_FILE (--http "+addr+" is not loopback)")
				if v := svc.Environment["AGENTFLEET_HTTP_VIEWER_TOKEN_FILE"]; v != "" {
					secretFile(name, svc, v, "AGENTFLEET_HTTP_VIEWER_TOKEN_FILE")
				}
			}
		}
	}
	for _, svc := range []string{"orchestrator", "toolworker"} {
		if c.Services[svc].Environment["NATS_USER"] != svc {
			t.Errorf("compose: %s connects as NATS user %q, want %s", svc, c.Services[svc].Environment["NATS_USER"], svc)
		}
	}
}

// composeDefault returns a compose value with its interpolations replaced
// by their defaults: "${X:-127.0.0.1}:4222:4222" is "127.0.0.1:4222:4222"
// when X is not set; a variable without a default is empty.
func composeDefault(v string) string {
	return regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?[^}]*\}`).ReplaceAllString(v, "$1")
}

// TestComposePorts checks what the README promises of compose: the
// dashboard and API of the first orchestrator on 127.0.0.1:8080, replicas
// on ports of their own, NATS on the host's loopback unless the user opts
// in (NATS_PUBLISH_ADDR), and every secret from the environment that a
// .env file sets, required (compose refuses to start without it).
func TestComposePorts(t *testing.T) {
	c := loadCompose(t)
	orch := c.Services["orchestrator"].Ports
	if len(orch) != 1 || !regexp.MustCompile(`^127\.0\.0\.1:8080(-80[0-9][0-9])?:8080$`).MatchString(orch[0]) {
		t.Errorf("compose: orchestrator publishes %v, want 127.0.0.1:8080 (a range from 8080 for replicas) to its 8080", orch)
	}
	readme, _ := os.ReadFile("README.md")
	if !strings.Contains(string(readme), "127.0.0.1:8080") {
		t.Error("README.md does not say where the dashboard is (127.0.0.1:8080)")
	}
	nats := c.Services["nats"].Ports
	if len(nats) != 1 || !strings.HasPrefix(nats[0], "${NATS_PUBLISH_ADDR:-127.0.0.1}:") || composeDefault(nats[0]) != "127.0.0.1:4222:4222" {
		t.Errorf("compose: nats publishes %v, want ${NATS_PUBLISH_ADDR:-127.0.0.1}:4222:4222 (loopback unless opted in)", nats)
	}
	for name, def := range c.Secrets {
		if def.Environment == "" || def.File != "" {
			t.Errorf("compose: secret %s comes from %+v, want a variable of the environment (.env)", name, def)
		}
	}
	for v, val := range c.Services["nats"].Environment {
		if strings.HasSuffix(v, "_PASSWORD") && !strings.HasPrefix(val, "${"+v+":?") {
			t.Errorf("compose: nats gets %s as %q, want it required from the environment (${%s:?…})", v, val, v)
		}
	}
	for in, want := range map[string]string{
		"${NATS_PUBLISH_ADDR:-127.0.0.1}:4222:4222": "127.0.0.1:4222:4222",
		"${X-0.0.0.0}:1:1":                          "0.0.0.0:1:1", "${X}:1:1": ":1:1", "127.0.0.1::8080": "127.0.0.1::8080",
		"${X:?set it}": "",
	} {
		if got := composeDefault(in); got != want {
			t.Errorf("composeDefault(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:8080": true, "[::1]:8080": true,
		":8080": false, "0.0.0.0:8080": false, "10.0.0.1:8080": false, "8080": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
