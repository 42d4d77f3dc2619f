package metrics_test

import (
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// retired returns the first flag of args that the orchestrator no longer
// takes (it ignores them with a warning), or "".
func retired(args []string) string {
	for _, a := range args {
		for _, f := range []string{"--elect", "--leader-ttl"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return f
			}
		}
	}
	return ""
}

// composeService is the part of a docker-compose.yml service that the
// tests read.
type composeService struct {
	Image         string   `yaml:"image"`
	ContainerName string   `yaml:"container_name"`
	Entrypoint    []string `yaml:"entrypoint"`
	Command       []string `yaml:"command"`
	Ports         []string `yaml:"ports"`
	Expose        []string `yaml:"expose"`
	DependsOn     map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	// Profiles name the optional services (Jaeger, in "tracing"): they
	// start only when asked for, and nothing of the system waits on them.
	Profiles []string `yaml:"profiles"`
}

func loadCompose(t *testing.T) map[string]composeService {
	t.Helper()
	data, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return c.Services
}

// beyondLoopback reports whether an --http address listens on more than
// the loopback interface, which is all a container's own process reaches.
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		return true
	}
	ip := net.ParseIP(host)
	return host != "localhost" && (ip == nil || !ip.IsLoopback())
}

// TestComposeServes checks the things of docker-compose.yml that an
// operator's first hour trips on: a worker serving the scripted tools,
// --http reachable from outside each container, healthchecks, start order
// on those healthchecks, and the orchestrator's port reachable without a
// fixed host port or container name, so that it scales.
func TestComposeServes(t *testing.T) {
	services := loadCompose(t)
	scripts := false
	for name, s := range services {
		if len(s.Profiles) > 0 {
			for other, o := range services {
				if _, ok := o.DependsOn[name]; ok {
					t.Errorf("compose service %s depends on %s, which starts only with --profile %s", other, name, s.Profiles[0])
				}
			}
			continue
		}
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("compose service %s has no healthcheck", name)
		}
		for dep, d := range s.DependsOn {
			if d.Condition != "service_healthy" {
				t.Errorf("compose service %s depends on %s with condition %q, want service_healthy", name, dep, d.Condition)
			}
		}
		if _, ok := flag(s.Command, "--scripts"); ok || slices.Contains(s.Command, "--scripts") {
			scripts = true
		}
		if _, ok := flag(s.Command, "--nats-url"); ok {
			if _, ok := flag(s.Command, "--connect-retry"); !ok {
				t.Errorf("compose service %s has no --connect-retry: it exits when NATS is not up yet", name)
			}
		}
		if addr, ok := flag(s.Command, "--http"); ok && !beyondLoopback(addr) {
			t.Errorf("compose service %s: --http %s listens on loopback only, out of reach of the published port and of Prometheus", name, addr)
		}
	}
	if !scripts {
		t.Error("no compose service runs --scripts: nothing serves the scripted tools, and write_tool fails")
	}
	o := services["orchestrator"]
	addr, ok := flag(o.Command, "--http")
	if !ok {
		// The default is 127.0.0.1:8080, which the host cannot reach.
		t.Fatal("the orchestrator's compose command has no --http, and its default listens on loopback only")
	}
	_, port, _ := net.SplitHostPort(addr)
	// docker compose up --scale orchestrator=3: the replicas may not share
	// a container name or a host port. The port is published on a host
	// port that Docker picks for each replica ("8080", "127.0.0.1::8080"),
	// or from a range, or only exposed on the compose network.
	if o.ContainerName != "" {
		t.Errorf("the orchestrator's compose service has container_name %q: it cannot scale", o.ContainerName)
	}
	if f := retired(o.Command); f != "" {
		t.Errorf("the orchestrator's compose command passes %s, which is retired: every orchestrator is active", f)
	}
	published := false
	for _, p := range o.Ports {
		cport, host := p, ""
		if i := strings.LastIndex(p, ":"); i >= 0 {
			cport, host = p[i+1:], p[:i]
		}
		if strings.TrimSuffix(cport, "/tcp") != port {
			continue
		}
		published = true
		// A range of host ports ("127.0.0.1:8080-8087:8080") gives each
		// replica its own; a single one collides at the second.
		if h := host[strings.LastIndex(host, ":")+1:]; h != "" && !strings.Contains(h, "-") {
			t.Errorf("the orchestrator publishes %s on the fixed host port %s: a second replica collides with it", p, h)
		}
	}
	if !published && !slices.Contains(o.Expose, port) {
		t.Errorf("the orchestrator's --http port %s is neither published nor exposed (ports %v, expose %v)", port, o.Ports, o.Expose)
	}
	for name, s := range services {
		if s.Healthcheck != nil && len(s.Healthcheck.Test) > 1 && s.Healthcheck.Test[0] == "CMD" && strings.HasPrefix(s.Healthcheck.Test[1], "/usr/local/bin/") {
			// A binary of the image: the Dockerfile must put it there.
			bin := strings.TrimPrefix(s.Healthcheck.Test[1], "/usr/local/bin/")
			df, err := os.ReadFile("../../Dockerfile")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(df), "/out/"+bin+" ") || !strings.Contains(string(df), "./cmd/"+bin) {
				t.Errorf("compose service %s's healthcheck runs %s, which the Dockerfile does not build into the image", name, bin)
			}
		}
	}
}

// TestManifestsServe checks the Kubernetes manifests the same way: a
// worker runs --scripts, every --http listens beyond loopback, every
// container has a readiness probe.
func TestManifestsServe(t *testing.T) {
	objs := loadManifests(t)
	scripts := false
	containers, orchestrators := 0, 0
	for key, o := range objs {
		for _, c := range o.Spec.Template.Spec.Containers {
			containers++
			if c.ReadinessProbe == nil {
				t.Errorf("%s: container of image %s has no readiness probe", key, c.Image)
			}
			if slices.Contains(c.Args, "--scripts") {
				scripts = true
			}
			if _, ok := flag(c.Args, "--nats-url"); ok {
				if _, ok := flag(c.Args, "--connect-retry"); !ok {
					t.Errorf("%s has no --connect-retry: it exits when NATS is not up yet", key)
				}
			}
			if addr, ok := flag(c.Args, "--http"); ok && !beyondLoopback(addr) {
				t.Errorf("%s: --http %s listens on loopback only, out of reach of the kubelet and Prometheus", key, addr)
			}
			if len(c.Command) > 0 && strings.HasSuffix(c.Command[0], "/orchestrator") {
				orchestrators++
				if _, ok := flag(c.Args, "--http"); !ok {
					t.Errorf("%s: the orchestrator has no --http, and its default listens on loopback only", key)
				}
				if f := retired(c.Args); f != "" {
					t.Errorf("%s: the orchestrator passes %s, which is retired: every orchestrator is active", key, f)
				}
			}
		}
	}
	if containers == 0 {
		t.Fatal("no containers found in deploy/k8s")
	}
	if orchestrators == 0 {
		t.Error("no container of deploy/k8s runs /usr/local/bin/orchestrator")
	}
	if !scripts {
		t.Error("no container of deploy/k8s runs --scripts: nothing serves the scripted tools, and write_tool fails")
	}
}

// TestNamespace checks that the namespace of the kubectl commands in the
// READMEs is the kustomization's, and that the kustomization creates it.
func TestNamespace(t *testing.T) {
	data, err := os.ReadFile("../../deploy/k8s/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Namespace string   `yaml:"namespace"`
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	if k.Namespace == "" {
		t.Fatal("kustomization.yaml sets no namespace")
	}
	ns := loadManifests(t)["Namespace/"+k.Namespace]
	if ns == nil {
		t.Errorf("deploy/k8s has no Namespace %s, so kubectl apply -k fails on a cluster without it", k.Namespace)
	}
	kubectlNS := regexp.MustCompile(`kubectl\s+(?:-n|--namespace)[ =](\S+)`)
	for _, f := range []string{"../../README.md", "../../deploy/README.md"} {
		readme, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range kubectlNS.FindAllStringSubmatch(string(readme), -1) {
			if m[1] != k.Namespace {
				t.Errorf("%s: %q uses namespace %s, the kustomization %s", f, m[0], m[1], k.Namespace)
			}
		}
	}
}

// TestDockerignore checks that the build context leaves out the state and
// history that COPY . . would otherwise send.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile("../../.dockerignore")
	if err != nil {
		t.Fatalf("no .dockerignore: COPY . . sends data/, .git and node_modules to the builder: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, strings.TrimSuffix(strings.TrimPrefix(l, "/"), "/"))
		}
	}
	for _, want := range []string{"data", ".git", "**/node_modules"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore does not exclude %s (it has %v)", want, lines)
		}
	}
}
