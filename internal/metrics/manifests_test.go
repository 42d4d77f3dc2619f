package metrics_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/orchestrator"
	"go.yaml.in/yaml/v3"
)

// object is the part of a Kubernetes object that the manifest test reads.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		Replicas int `yaml:"replicas"`
		Strategy struct {
			Type          string `yaml:"type"`
			RollingUpdate struct {
				MaxUnavailable any `yaml:"maxUnavailable"`
				MaxSurge       any `yaml:"maxSurge"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas          int            `yaml:"minReplicas"`
		MaxReplicas          int            `yaml:"maxReplicas"`
		Metrics              []hpaMetric    `yaml:"metrics"`
		MinAvailable         any            `yaml:"minAvailable"`
		MaxUnavailable       any            `yaml:"maxUnavailable"`
		Selector             map[string]any `yaml:"selector"`
		VolumeClaimTemplates []any          `yaml:"volumeClaimTemplates"`
		Template             struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds int         `yaml:"terminationGracePeriodSeconds"`
				Containers                    []container `yaml:"containers"`
				SecurityContext               struct {
					RunAsNonRoot bool `yaml:"runAsNonRoot"`
					RunAsUser    int  `yaml:"runAsUser"`
				} `yaml:"securityContext"`
				Volumes []struct {
					Name   string `yaml:"name"`
					Secret struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// hpaMetric is a metric a HorizontalPodAutoscaler scales on.
type hpaMetric struct {
	Type     string `yaml:"type"`
	Resource struct {
		Name string `yaml:"name"`
	} `yaml:"resource"`
}

type container struct {
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe   `yaml:"livenessProbe"`
	ReadinessProbe *probe   `yaml:"readinessProbe"`
	Env            []envVar `yaml:"env"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
}

type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom struct {
		SecretKeyRef struct {
			Name     string `yaml:"name"`
			Key      string `yaml:"key"`
			Optional bool   `yaml:"optional"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

// env returns the variable name of c, and whether c sets it.
func (c *container) env(name string) (envVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return envVar{}, false
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

// port resolves a probe's port, a number or the name of a container port.
func (c *container) port(p any) int {
	switch p := p.(type) {
	case int:
		return p
	case string:
		for _, cp := range c.Ports {
			if cp.Name == p {
				return cp.ContainerPort
			}
		}
	}
	return 0
}

// zero reports whether an int-or-string field (maxUnavailable) is 0 or "0%".
func zero(v any) bool {
	switch v := v.(type) {
	case int:
		return v == 0
	case string:
		return v == "0" || v == "0%"
	}
	return false
}

// flag returns the value that follows name in args, and whether name is
// there.
func flag(args []string, name string) (string, bool) {
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

func loadManifests(t *testing.T) map[string]*object {
	t.Helper()
	files, err := filepath.Glob("../../deploy/k8s/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/k8s (%v)", err)
	}
	objs := map[string]*object{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(fh)
		for {
			var o object
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
				t.Errorf("%s: an object without kind, apiVersion or name", f)
			}
			if o.Metadata.Namespace != "" {
				t.Errorf("%s: %s/%s names namespace %q; the manifests must not", f, o.Kind, o.Metadata.Name, o.Metadata.Namespace)
			}
			key := o.Kind + "/" + o.Metadata.Name
			if objs[key] != nil {
				t.Errorf("%s: %s defined twice", f, key)
			}
			objs[key] = &o
		}
		fh.Close()
	}
	return objs
}

// TestManifests checks what deploy/README.md says of the Kubernetes
// manifests: the flags, ports, probes and grace periods of the commands,
// the agent profiles, the autoscaler and the NATS cluster.
func TestManifests(t *testing.T) {
	objs := loadManifests(t)
	get := func(key string) *object {
		t.Helper()
		o := objs[key]
		if o == nil {
			t.Fatalf("deploy/k8s has no %s", key)
		}
		return o
	}

	for _, c := range []struct {
		deployment, http string
		flags            map[string]string
		minGrace         int
	}{
		{"agentfleet-orchestrator", ":8080", map[string]string{
			"--nats-url": "nats://nats:4222", "--config": "/etc/agentfleet/agents.yaml", "--log-format": "json", "--stream-replicas": "3",
		}, 31},
		{"agentfleet-toolworker", ":9090", map[string]string{"--nats-url": "nats://nats:4222", "--log-format": "json"}, 40},
	} {
		d := get("Deployment/" + c.deployment)
		pod := d.Spec.Template
		if len(pod.Spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", c.deployment, len(pod.Spec.Containers))
		}
		ct := &pod.Spec.Containers[0]
		if v, _ := flag(ct.Args, "--http"); v != c.http {
			t.Errorf("%s: --http %q, want %q", c.deployment, v, c.http)
		}
		for name, want := range c.flags {
			if v, _ := flag(ct.Args, name); v != want {
				t.Errorf("%s: %s %q, want %q", c.deployment, name, v, want)
			}
		}
		port := strings.TrimPrefix(c.http, ":")
		for what, p := range map[string]*probe{"/healthz": ct.LivenessProbe, "/readyz": ct.ReadinessProbe} {
			if p == nil || p.HTTPGet.Path != what || strconv.Itoa(ct.port(p.HTTPGet.Port)) != port {
				t.Errorf("%s: no probe of %s on port %s", c.deployment, what, port)
			}
		}
		ann := pod.Metadata.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != port || ann["prometheus.io/path"] != "/metrics" {
			t.Errorf("%s: scrape annotations %v, want port %s and path /metrics", c.deployment, ann, port)
		}
		if pod.Metadata.Labels["app.kubernetes.io/part-of"] != "agentfleet" {
			t.Errorf("%s: the pods lack app.kubernetes.io/part-of=agentfleet, which the scrape config keeps", c.deployment)
		}
		if g := pod.Spec.TerminationGracePeriodSeconds; g < c.minGrace {
			t.Errorf("%s: terminationGracePeriodSeconds %d, want at least %d", c.deployment, g, c.minGrace)
		}
		get("Service/" + c.deployment)
	}
	orch := get("Deployment/agentfleet-orchestrator")
	if got := orch.Spec.Replicas; got < 2 {
		t.Errorf("orchestrator replicas = %d, want at least 2 (all active: one that dies is a failover of its share)", got)
	}
	if ru := orch.Spec.Strategy.RollingUpdate; orch.Spec.Strategy.Type != "RollingUpdate" || !zero(ru.MaxUnavailable) {
		t.Errorf("orchestrator strategy %s with maxUnavailable %v, want a RollingUpdate with maxUnavailable 0 (capacity kept)", orch.Spec.Strategy.Type, ru.MaxUnavailable)
	}
	octr := orch.Spec.Template.Spec.Containers[0]
	shutdown := 30 * time.Second // the orchestrator's default
	if v, ok := flag(octr.Args, "--shutdown-timeout"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Errorf("orchestrator: --shutdown-timeout %q: %v", v, err)
		}
		shutdown = d
	}
	if g := time.Duration(orch.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second; g <= shutdown {
		t.Errorf("orchestrator: terminationGracePeriodSeconds %v is not above --shutdown-timeout %v: the kubelet kills it before it hands its partitions over", g, shutdown)
	}
	if v, ok := flag(octr.Args, "--lease-ttl"); !ok {
		t.Error("orchestrator: no --lease-ttl; the failover time should be explicit")
	} else if d, err := time.ParseDuration(v); err != nil || d <= 0 {
		t.Errorf("orchestrator: --lease-ttl %q is not a positive duration (%v)", v, err)
	}
	if octr.Resources.Requests["cpu"] == "" {
		t.Error("orchestrator: no CPU request, so the HPA's utilization has nothing to measure against")
	}

	// Every orchestrator is active; an autoscaler owns their number.
	ohpa := get("HorizontalPodAutoscaler/agentfleet-orchestrator")
	if ohpa.APIVersion != "autoscaling/v2" || ohpa.Spec.ScaleTargetRef.Kind != "Deployment" || ohpa.Spec.ScaleTargetRef.Name != "agentfleet-orchestrator" {
		t.Errorf("the orchestrator's HPA is %s on %+v, want autoscaling/v2 on Deployment agentfleet-orchestrator", ohpa.APIVersion, ohpa.Spec.ScaleTargetRef)
	}
	if ohpa.Spec.MinReplicas < 2 || ohpa.Spec.MaxReplicas < ohpa.Spec.MinReplicas || orch.Spec.Replicas < ohpa.Spec.MinReplicas || orch.Spec.Replicas > ohpa.Spec.MaxReplicas {
		t.Errorf("the orchestrator's HPA scales %d to %d from %d replicas; want a minimum of 2 at least and the Deployment's replicas within the bounds",
			ohpa.Spec.MinReplicas, ohpa.Spec.MaxReplicas, orch.Spec.Replicas)
	}
	if !slices.ContainsFunc(ohpa.Spec.Metrics, func(m hpaMetric) bool {
		return m.Type == "Resource" && m.Resource.Name == "cpu"
	}) {
		t.Errorf("the orchestrator's HPA does not scale on CPU (metrics %+v)", ohpa.Spec.Metrics)
	}
	pdb := get("PodDisruptionBudget/agentfleet-orchestrator")
	if pdb.Spec.MinAvailable == nil && pdb.Spec.MaxUnavailable == nil {
		t.Error("the orchestrator's PodDisruptionBudget sets neither minAvailable nor maxUnavailable")
	}
	if ml, _ := pdb.Spec.Selector["matchLabels"].(map[string]any); ml["app.kubernetes.io/name"] != "agentfleet-orchestrator" {
		t.Errorf("the orchestrator's PodDisruptionBudget selects %v, not its pods", pdb.Spec.Selector)
	}
	env := get("Deployment/agentfleet-orchestrator").Spec.Template.Spec.Containers[0].Env
	if !slices.ContainsFunc(env, func(e envVar) bool {
		return e.Name == "OPENAI_API_KEY" && e.ValueFrom.SecretKeyRef.Name != "" && e.ValueFrom.SecretKeyRef.Optional
	}) {
		t.Error("orchestrator: OPENAI_API_KEY does not come from an optional Secret")
	}

	// The ConfigMap holds deploy/agents.yaml, which the orchestrator loads.
	want, err := os.ReadFile("../../deploy/agents.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := get("ConfigMap/agentfleet-agents").Data["agents.yaml"]
	if strings.TrimSpace(got) != strings.TrimSpace(string(want)) {
		t.Errorf("the ConfigMap's agents.yaml differs from deploy/agents.yaml:\n%s", got)
	}
	if profiles, err := orchestrator.ParseProfiles([]byte(got)); err != nil || len(profiles) == 0 {
		t.Errorf("the ConfigMap's agents.yaml does not load: %v", err)
	}

	hpa := get("HorizontalPodAutoscaler/agentfleet-toolworker")
	if hpa.APIVersion != "autoscaling/v2" || hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "agentfleet-toolworker" {
		t.Errorf("the HPA is %s on %+v, want autoscaling/v2 on Deployment agentfleet-toolworker", hpa.APIVersion, hpa.Spec.ScaleTargetRef)
	}

	nats := get("StatefulSet/nats")
	if nats.Spec.Replicas != 3 || len(nats.Spec.VolumeClaimTemplates) == 0 {
		t.Errorf("NATS: %d replicas, %d volume claim templates; want 3 and a volume for JetStream", nats.Spec.Replicas, len(nats.Spec.VolumeClaimTemplates))
	}
	if img := nats.Spec.Template.Spec.Containers[0].Image; img != "nats:2.12" {
		t.Errorf("NATS image %q, want nats:2.12", img)
	}
	conf := get("ConfigMap/nats-config").Data["nats.conf"]
	for _, want := range []string{"jetstream", "store_dir: /data", "cluster", "nats-0.nats-headless:6222", "nats-2.nats-headless:6222", "server_name: $SERVER_NAME"} {
		if !strings.Contains(conf, want) {
			t.Errorf("nats.conf lacks %q", want)
		}
	}
	get("Service/nats")

	// kustomization.yaml lists every manifest.
	data, err := os.ReadFile("../../deploy/k8s/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../deploy/k8s/*.yaml")
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !slices.Contains(k.Resources, b) {
			t.Errorf("kustomization.yaml does not list %s", b)
		}
	}
}

// TestPrometheusConfig checks that the scrape configs parse and keep the
// pods that the manifests annotate.
func TestPrometheusConfig(t *testing.T) {
	for _, f := range []string{"../../deploy/prometheus/prometheus.yml", "../../deploy/prometheus/prometheus-local.yml"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			ScrapeConfigs []struct {
				JobName        string           `yaml:"job_name"`
				KubernetesSD   []map[string]any `yaml:"kubernetes_sd_configs"`
				StaticConfigs  []map[string]any `yaml:"static_configs"`
				RelabelConfigs []struct {
					SourceLabels []string `yaml:"source_labels"`
					Regex        string   `yaml:"regex"`
				} `yaml:"relabel_configs"`
			} `yaml:"scrape_configs"`
		}
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(cfg.ScrapeConfigs) == 0 {
			t.Fatalf("%s has no scrape config", f)
		}
		for _, sc := range cfg.ScrapeConfigs {
			if sc.JobName == "" || len(sc.KubernetesSD) == 0 && len(sc.StaticConfigs) == 0 {
				t.Errorf("%s: job %q has no name or no targets", f, sc.JobName)
			}
		}
	}
}
