package metrics_test

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
)

// TestManifestsSecurity checks that the Kubernetes manifests run with NATS
// users on and least privilege: the servers' users are those of
// deploy/nats/roles.conf with their passwords from a Secret, each reading
// only its own inbox space; every command connects as its user with its
// password from that Secret (never on its command line); the orchestrator's
// HTTP listener, on every interface of the pod, has its tokens from a
// Secret; and the pods run as a numeric non-root user.
func TestManifestsSecurity(t *testing.T) {
	objs := loadManifests(t)
	cm := objs["ConfigMap/nats-config"]
	if cm == nil {
		t.Fatal("deploy/k8s has no ConfigMap/nats-config")
	}
	roles, err := os.ReadFile("../../deploy/nats/roles.conf")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["roles.conf"] != string(roles) {
		t.Error("the ConfigMap's roles.conf differs from deploy/nats/roles.conf")
	}
	dir := t.TempDir()
	for name, content := range cm.Data {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The server reads each password from the environment: set each to a
	// value of its own, and find it as that user's.
	t.Setenv("SERVER_NAME", "nats-0")
	vars := regexp.MustCompile(`password:\s*\$([A-Z0-9_]+)`).FindAllStringSubmatch(cm.Data["nats.conf"], -1)
	sentinel := map[string]string{}
	for _, m := range vars {
		sentinel[m[1]] = "sentinel-of-" + m[1]
		t.Setenv(m[1], sentinel[m[1]])
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatalf("the ConfigMap's nats.conf: %v", err)
	}
	users := map[string]bool{}
	for _, u := range opts.Users {
		users[u.Username] = true
		v := "NATS_" + strings.ToUpper(u.Username) + "_PASSWORD"
		if u.Password != sentinel[v] {
			t.Errorf("NATS user %s's password is not $%s", u.Username, v)
		}
		own := "_INBOX." + u.Username + ".>"
		if u.Permissions == nil || u.Permissions.Subscribe == nil || !slices.Contains(u.Permissions.Subscribe.Allow, own) {
			t.Errorf("NATS user %s may not subscribe to its own inbox space %s", u.Username, own)
			continue
		}
		for _, s := range u.Permissions.Subscribe.Allow {
			if first, _, _ := strings.Cut(s, "."); s != own && (first == "_INBOX" || first == "*" || first == ">") {
				t.Errorf("NATS user %s may subscribe to %s, beyond its own inbox space", u.Username, s)
			}
		}
	}
	for _, want := range []string{"orchestrator", "toolworker", "client", "dashboard"} {
		if !users[want] {
			t.Errorf("the NATS servers have no user %s", want)
		}
	}
	nats := objs["StatefulSet/nats"].Spec.Template.Spec.Containers[0]
	for v := range sentinel {
		e, ok := nats.env(v)
		ref := e.ValueFrom.SecretKeyRef
		if !ok || e.Value != "" || ref.Name == "" || ref.Optional {
			t.Errorf("NATS: %s is not set from a required Secret: %+v", v, e)
		}
	}

	for _, c := range []struct{ deployment, user string }{
		{"agentfleet-orchestrator", "orchestrator"},
		{"agentfleet-toolworker", "toolworker"},
	} {
		d := objs["Deployment/"+c.deployment]
		if d == nil {
			t.Fatalf("deploy/k8s has no Deployment/%s", c.deployment)
		}
		pod := d.Spec.Template.Spec
		ct := &pod.Containers[0]
		if sc := pod.SecurityContext; !sc.RunAsNonRoot || sc.RunAsUser <= 0 {
			t.Errorf("%s: securityContext runAsNonRoot %v, runAsUser %d; want a numeric non-root user (the image's is a name, which the kubelet cannot check)", c.deployment, sc.RunAsNonRoot, sc.RunAsUser)
		}
		for _, a := range ct.Args {
			if a == "--password" || a == "--token" || strings.HasPrefix(a, "--password=") || strings.HasPrefix(a, "--token=") || strings.Contains(a, "$(NATS_PASSWORD)") {
				t.Errorf("%s: a secret on the command line: %v", c.deployment, ct.Args)
			}
		}
		if u, _ := flag(ct.Args, "--nats-url"); strings.Contains(u, "@") {
			t.Errorf("%s: credentials in --nats-url %s", c.deployment, u)
		}
		if e, _ := ct.env("NATS_USER"); e.Value != c.user || !users[c.user] {
			t.Errorf("%s: NATS_USER %q, want %s, a user of the NATS servers", c.deployment, e.Value, c.user)
		}
		e, ok := ct.env("NATS_PASSWORD")
		ref := e.ValueFrom.SecretKeyRef
		if !ok || e.Value != "" || ref.Optional || ref.Name == "" || ref.Key != c.user {
			t.Errorf("%s: NATS_PASSWORD is not the key %s of a required Secret: %+v", c.deployment, c.user, e)
		}
		for v := range sentinel {
			if v == "NATS_"+strings.ToUpper(c.user)+"_PASSWORD" {
				se, _ := nats.env(v)
				if se.ValueFrom.SecretKeyRef.Name != ref.Name || se.ValueFrom.SecretKeyRef.Key != ref.Key {
					t.Errorf("%s: its password %s/%s is not the one the NATS servers have for %s (%s/%s)", c.deployment, ref.Name, ref.Key, c.user,
						se.ValueFrom.SecretKeyRef.Name, se.ValueFrom.SecretKeyRef.Key)
				}
			}
		}
	}

	// The orchestrator's HTTP listener is on every interface of the pod:
	// its token files come from a Secret volume.
	orch := objs["Deployment/agentfleet-orchestrator"].Spec.Template.Spec
	ct := &orch.Containers[0]
	addr, _ := flag(ct.Args, "--http")
	if host, _, _ := net.SplitHostPort(addr); host == "" || !net.ParseIP(host).IsLoopback() {
		if slices.Contains(ct.Args, "--insecure-http") {
			t.Error("orchestrator: --insecure-http")
		}
		for _, v := range []string{"AGENTFLEET_HTTP_TOKEN_FILE", "AGENTFLEET_HTTP_VIEWER_TOKEN_FILE"} {
			e, _ := ct.env(v)
			fromSecret := false
			for _, m := range ct.VolumeMounts {
				if strings.HasPrefix(e.Value, m.MountPath+"/") {
					for _, vol := range orch.Volumes {
						fromSecret = fromSecret || vol.Name == m.Name && vol.Secret.SecretName != ""
					}
				}
			}
			if !fromSecret {
				t.Errorf("orchestrator: --http %s is not loopback, and %s (%q) is not a file of a Secret volume", addr, v, e.Value)
			}
		}
	}
}
