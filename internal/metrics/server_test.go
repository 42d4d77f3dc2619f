package metrics_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/metrics"
)

func TestProbes(t *testing.T) {
	var notReady atomic.Pointer[error]
	ready := func() error {
		if err := notReady.Load(); err != nil {
			return *err
		}
		return nil
	}
	s := serve(t, metrics.NewOrchestrator().Registry(), ready)

	check := func(path string, wantCode int, wantBody string) {
		t.Helper()
		code, body := get(t, s, path)
		if code != wantCode || strings.TrimSpace(body) != wantBody {
			t.Errorf("GET %s = %d %q, want %d %q", path, code, body, wantCode, wantBody)
		}
	}
	check("/healthz", http.StatusOK, "ok")
	check("/readyz", http.StatusOK, "ok")

	err := errors.New("not connected to NATS: nats: connection closed")
	notReady.Store(&err)
	check("/readyz", http.StatusServiceUnavailable, "not connected to NATS: nats: connection closed")
	check("/healthz", http.StatusOK, "ok") // alive all the same

	notReady.Store(nil)
	check("/readyz", http.StatusOK, "ok")

	if code, _ := get(t, s, "/nothing"); code != http.StatusNotFound {
		t.Errorf("GET /nothing = %d, want 404", code)
	}
	resp, err2 := http.Post("http://"+s.Addr()+"/metrics", "text/plain", nil)
	if err2 != nil {
		t.Fatal(err2)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /metrics = %d, want 405", resp.StatusCode)
	}
}

func TestNilReadyIsReady(t *testing.T) {
	s := serve(t, metrics.NewWorker().Registry(), nil)
	if code, _ := get(t, s, "/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz = %d, want 200", code)
	}
}

func TestListenTakenPortNamesFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	s, err := metrics.Listen(addr, "http", metrics.NewWorker().Registry(), nil)
	if err == nil {
		s.Close()
		t.Fatalf("Listen on the taken %s succeeded", addr)
	}
	if got, want := err.Error(), "--http "+addr+": address already in use"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("errors.Is(%v, EADDRINUSE) is false", err)
	}

	_, err = metrics.Listen("127.0.0.1", "metrics-addr", metrics.NewWorker().Registry(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "--metrics-addr 127.0.0.1: ") {
		t.Errorf("a bad address gives %v, want an error naming --metrics-addr", err)
	}
}

func TestListenEmptyAddrIsOff(t *testing.T) {
	s, err := metrics.Listen("", "http", metrics.NewWorker().Registry(), nil)
	if err != nil || s != nil {
		t.Fatalf("Listen(\"\") = %v, %v; want nil, nil", s, err)
	}
	// A nil server's methods do nothing.
	if s.Addr() != "" || s.Close() != nil || s.Shutdown(context.Background()) != nil {
		t.Error("the methods of a nil Server do something")
	}
}

func TestShutdownFreesPort(t *testing.T) {
	s, err := metrics.Listen("127.0.0.1:0", "http", metrics.NewWorker().Registry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	get(t, s, "/healthz") // leaves an idle keep-alive connection
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close after shutdown: %v", err)
	}
	s2, err := metrics.Listen(addr, "http", metrics.NewWorker().Registry(), nil)
	if err != nil {
		t.Fatalf("the port is still taken after Shutdown: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestShutdownClosesConnectionsWithoutRequests opens a connection that
// sends nothing (a client's spare one, a browser's preconnect) beside a
// request in flight: Shutdown, bounded by 2 s, lets the request finish and
// returns nil, where http.Server alone waits 5 s for such a connection and
// fails with the deadline.
func TestShutdownClosesConnectionsWithoutRequests(t *testing.T) {
	s, err := metrics.Listen("127.0.0.1:0", "http", metrics.NewWorker().Registry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	s.Handle("GET /slow", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-release
		w.Write([]byte("done"))
	}))
	idle, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + s.Addr() + "/slow")
		if err != nil {
			body <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body <- string(b)
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	close(release) // the request in flight ends while the server stops
	if err := <-done; err != nil {
		t.Errorf("shutdown: %v", err)
	}
	if got := <-body; got != "done" {
		t.Errorf("the request in flight got %q, want done", got)
	}
	// The silent connection was closed by the server.
	idle.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the connection without a request is still open after Shutdown (read: %v)", err)
	}
}
