package agentfleet_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"go.yaml.in/yaml/v3"
)

// TestDeployFilesParse loads every YAML file of the repository's deployment
// (there is no container engine to run them here, so they are checked by
// parsing) and checks what the README promises of them.
func TestDeployFilesParse(t *testing.T) {
	files := []string{"docker-compose.yml"}
	filepath.WalkDir("deploy", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for i := 0; ; i++ {
			var doc any
			if err := dec.Decode(&doc); err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Errorf("%s: document %d: %v", f, i+1, err)
				break
			}
		}
	}

	compose := loadCompose(t)
	for _, name := range []string{"nats", "orchestrator", "toolworker"} {
		if _, ok := compose.Services[name]; !ok {
			t.Errorf("docker-compose.yml has no service %q", name)
		}
	}
	if got := compose.Services["toolworker"].Deploy.Replicas; got != 3 {
		t.Errorf("toolworker replicas = %d, want 3", got)
	}
	for _, name := range []string{"orchestrator", "toolworker"} {
		if v, ok := compose.Services[name].Environment["OTEL_EXPORTER_OTLP_ENDPOINT"]; !ok || v != "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" {
			t.Errorf("%s does not pass OTEL_EXPORTER_OTLP_ENDPOINT on from the shell: %q", name, v)
		}
	}
	if j, ok := compose.Services["jaeger"]; !ok || !slices.Equal(j.Profiles, []string{"tracing"}) {
		t.Errorf("docker-compose.yml has no jaeger service in the tracing profile")
	}
	if conf := natsConfigOf(compose.Services["nats"].Command); conf == "" {
		t.Errorf("nats runs without a configuration file: %v", compose.Services["nats"].Command)
	} else if data, err := os.ReadFile(filepath.Join("deploy", "nats", filepath.Base(conf))); err != nil || !strings.Contains(string(data), "jetstream") {
		t.Errorf("nats runs with %s, which has no JetStream (%v)", conf, err)
	}

	profiles, err := orchestrator.LoadProfiles("deploy/agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(profiles) == 0 {
		t.Error("deploy/agents.yaml has no agents")
	}
}

func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	if n := len(regexp.MustCompile(`(?m)^FROM `).FindAllString(s, -1)); n < 2 {
		t.Errorf("Dockerfile has %d stages, want a multi-stage build", n)
	}
	// A numeric user, or Kubernetes cannot check runAsNonRoot and refuses
	// to start the pods.
	if !regexp.MustCompile(`(?m)^USER [1-9][0-9]*(:[0-9]+)?$`).MatchString(s) {
		t.Error("Dockerfile sets no numeric, non-root USER")
	}
	for _, want := range []string{"./cmd/orchestrator", "./cmd/toolworker", "COPY --from=build"} {
		if !strings.Contains(s, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "COPY ") && !strings.Contains(line, "--from") {
			src := strings.Fields(line)[1]
			if _, err := os.Stat(src); err != nil {
				t.Errorf("Dockerfile copies %s, which does not exist", src)
			}
		}
	}
}
