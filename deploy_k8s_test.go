package agentfleet_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kustomization is what TestKustomizeRender reads of
// deploy/k8s/kustomization.yaml.
type kustomization struct {
	Namespace string   `yaml:"namespace"`
	Resources []string `yaml:"resources"`
	Images    []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
	} `yaml:"images"`
}

// podSecurity and the types below are the parts of a workload that the
// kubelet checks before it starts a container.
type podSecurity struct {
	RunAsNonRoot *bool  `yaml:"runAsNonRoot"`
	RunAsUser    *int64 `yaml:"runAsUser"`
	RunAsGroup   *int64 `yaml:"runAsGroup"`
	FSGroup      *int64 `yaml:"fsGroup"`
}

type containerSecurity struct {
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
}

type workload struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext podSecurity `yaml:"securityContext"`
				Containers      []struct {
					Name            string            `yaml:"name"`
					Image           string            `yaml:"image"`
					SecurityContext containerSecurity `yaml:"securityContext"`
				} `yaml:"containers"`
				InitContainers []any `yaml:"initContainers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// imageUser returns the numeric user and group of the Dockerfile's last
// USER line.
func imageUser(t *testing.T) (uid, gid int64) {
	t.Helper()
	data, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER ([0-9]+):([0-9]+)\s*$`).FindAllStringSubmatch(string(data), -1)
	if len(m) == 0 {
		t.Fatal("Dockerfile: no USER uid:gid line with numbers")
	}
	last := m[len(m)-1]
	uid, _ = strconv.ParseInt(last[1], 10, 64)
	gid, _ = strconv.ParseInt(last[2], 10, 64)
	return uid, gid
}

// TestKustomizeRender renders deploy/k8s as `kubectl kustomize` would for
// what the manifests use (the resources of kustomization.yaml, its images
// override; kubectl is not needed) and checks every pod: it runs as the
// Dockerfile's numeric user and group, non-root, with its volumes in that
// group, every container without privilege escalation and without
// capabilities, and the fleet's containers from the image of the override,
// never an unpushed local tag.
func TestKustomizeRender(t *testing.T) {
	uid, gid := imageUser(t)
	if uid == 0 {
		t.Fatal("Dockerfile runs as root")
	}
	data, err := os.ReadFile("deploy/k8s/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatalf("deploy/k8s/kustomization.yaml: %v", err)
	}
	images := map[string]string{}
	for _, im := range k.Images {
		if im.NewName == "" || im.NewTag == "" || im.NewTag == "latest" {
			t.Errorf("kustomization.yaml: image %s → %s:%s, want a name and a tag other than latest", im.Name, im.NewName, im.NewTag)
		}
		images[im.Name] = im.NewName + ":" + im.NewTag
	}
	if images["agentfleet"] == "" {
		t.Fatal("kustomization.yaml overrides no image agentfleet")
	}
	pods := 0
	for _, res := range k.Resources {
		f, err := os.Open(filepath.Join("deploy/k8s", res))
		if err != nil {
			t.Fatalf("kustomization.yaml lists %s: %v", res, err)
		}
		dec := yaml.NewDecoder(f)
		for {
			var w workload
			if err := dec.Decode(&w); err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s: %v", res, err)
				}
				break
			}
			if len(w.Spec.Template.Spec.Containers) == 0 {
				continue // no pod template
			}
			pods++
			where := res + ": " + w.Kind + "/" + w.Metadata.Name
			pod := w.Spec.Template.Spec
			sc := pod.SecurityContext
			if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
				t.Errorf("%s: runAsNonRoot is not true", where)
			}
			for _, f := range []struct {
				name string
				got  *int64
				want int64
			}{{"runAsUser", sc.RunAsUser, uid}, {"runAsGroup", sc.RunAsGroup, gid}, {"fsGroup", sc.FSGroup, gid}} {
				if f.got == nil || *f.got != f.want {
					t.Errorf("%s: pod %s %v, want %d (the Dockerfile's USER %d:%d)", where, f.name, deref(f.got), f.want, uid, gid)
				}
			}
			for _, c := range pod.Containers {
				cs := c.SecurityContext
				if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
					t.Errorf("%s: container %s may escalate privileges", where, c.Name)
				}
				if len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" {
					t.Errorf("%s: container %s drops capabilities %v, want ALL", where, c.Name, cs.Capabilities.Drop)
				}
				if cs.RunAsUser != nil && *cs.RunAsUser != uid {
					t.Errorf("%s: container %s runAsUser %d, want the pod's %d", where, c.Name, *cs.RunAsUser, uid)
				}
				name, _, _ := strings.Cut(c.Image, ":")
				rendered, overridden := images[name]
				if !overridden {
					rendered = c.Image
				}
				if strings.HasPrefix(c.Name, "orchestrator") || strings.HasPrefix(c.Name, "toolworker") {
					if rendered != images["agentfleet"] {
						t.Errorf("%s: container %s renders image %s, want %s (the override of agentfleet)", where, c.Name, rendered, images["agentfleet"])
					}
				}
				if !strings.Contains(rendered, ":") || strings.HasSuffix(rendered, ":latest") {
					t.Errorf("%s: container %s renders image %s, want a pinned tag", where, c.Name, rendered)
				}
			}
		}
		f.Close()
	}
	if pods < 3 {
		t.Errorf("rendered %d pod templates, want the orchestrator's, the workers' and NATS's", pods)
	}
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}
