package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHealthcheck(t *testing.T) {
	ready := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready {
			http.Error(w, "not connected to NATS", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	var stderr strings.Builder
	if code := run([]string{srv.URL + "/readyz"}, &stderr); code != 0 {
		t.Errorf("ready: exit %d, %s", code, stderr.String())
	}
	ready = false
	stderr.Reset()
	if code := run([]string{srv.URL + "/readyz"}, &stderr); code != 1 || !strings.Contains(stderr.String(), "not connected to NATS") {
		t.Errorf("not ready: exit %d, %q", code, stderr.String())
	}
	srv.Close()
	stderr.Reset()
	if code := run([]string{srv.URL + "/readyz"}, &stderr); code != 1 {
		t.Errorf("no server: exit %d, %q", code, stderr.String())
	}
	if code := run(nil, &stderr); code != 2 {
		t.Errorf("no URL: exit %d", code)
	}
}
