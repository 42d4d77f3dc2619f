package httpauth

import "testing"

func TestHostsAllows(t *testing.T) {
	h, err := NewHosts("dash.example.com:8080", []string{"Proxy.Example.", "only.example:443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		want bool
	}{
		{"localhost", true},
		{"localhost:8080", true},
		{"LOCALHOST:1", true},
		{"127.0.0.1:8080", true},
		{"[::1]:8080", true},
		{"10.1.2.3:8080", true}, // a kubelet probe's Host: the pod's IP
		{"[2001:db8::1]:8080", true},
		{"dash.example.com:8080", true}, // the listen host
		{"dash.example.com", true},
		{"proxy.example:9999", true},
		{"proxy.example.:9999", true},
		{"only.example:443", true},
		// Refused: the names of DNS rebinding and anything not listed.
		{"evil.example:8080", false},
		{"only.example:8443", false},
		{"only.example", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.nip.io:8080", false},
		{"", false},
	} {
		if got := h.Allows(c.host); got != c.want {
			t.Errorf("Allows(%q) = %v, want %v", c.host, got, c.want)
		}
	}
	any, _ := NewHosts(":8080", []string{"*"})
	if !any.Allows("evil.example") {
		t.Error(`"*" does not allow every name`)
	}
	if _, err := NewHosts(":8080", []string{"http://x.example/"}); err == nil {
		t.Error("a URL was taken as an allowed host")
	}
	wild, _ := NewHosts("0.0.0.0:8080", nil)
	if got := wild.Names(); len(got) != 1 || got[0] != "localhost" {
		t.Errorf("names of a listener on 0.0.0.0 = %v, want only localhost", got)
	}
}

func TestLoopbackAndExposure(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"127.9.9.9:1", true}, {"[::1]:8080", true}, {"localhost:8080", true},
		{"0.0.0.0:8080", false}, {":8080", false}, {"[::]:8080", false}, {"10.0.0.1:8080", false}, {"dash.example.com:80", false},
	} {
		if got := Loopback(c.addr); got != c.want {
			t.Errorf("Loopback(%q) = %v, want %v", c.addr, got, c.want)
		}
	}
	err := CheckExposure("--http", "0.0.0.0:8080", false, false)
	if err == nil {
		t.Fatal("0.0.0.0 without credentials was allowed")
	}
	for _, want := range []string{"--http 0.0.0.0:8080", "--http-token-file", "AGENTFLEET_HTTP_TOKEN_FILE", "--http-viewer-token-file", "AGENTFLEET_HTTP_VIEWER_TOKEN_FILE", "--insecure-http"} {
		if !contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	for _, ok := range []error{
		CheckExposure("--http", "0.0.0.0:8080", true, false),
		CheckExposure("--http", "0.0.0.0:8080", false, true),
		CheckExposure("--http", "127.0.0.1:8080", false, false),
	} {
		if ok != nil {
			t.Errorf("refused: %v", ok)
		}
	}
}
