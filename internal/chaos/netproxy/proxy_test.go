package netproxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"testing"
	"time"
)

// echoServer is a real TCP server that sends back what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func startProxy(t *testing.T, upstream string) *Proxy {
	t.Helper()
	p, err := Listen(upstream, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes b and reads as many bytes back, within d.
func roundTrip(t *testing.T, c net.Conn, b []byte, d time.Duration) ([]byte, error) {
	t.Helper()
	c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() { _, err := c.Write(b); errc <- err }()
	got := make([]byte, len(b))
	_, err := io.ReadFull(c, got)
	if werr := <-errc; werr != nil && err == nil {
		err = werr
	}
	return got, err
}

func TestPassCarriesAnyBytesInOrder(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	// Garbage of every byte value, more than the read-ahead bound.
	b := make([]byte, 3*maxHeld+17)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	got, err := roundTrip(t, c, b, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Fatal("the bytes came back changed or out of order")
	}
}

func TestBlackholeHoldsThenReleases(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	if _, err := roundTrip(t, c, []byte("before"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Set(Mode{Blackhole: true}); err != nil {
		t.Fatal(err)
	}
	// Held: nothing comes back, and the connection is not closed or reset
	// (the read times out rather than ending).
	_, err := roundTrip(t, c, []byte("during"), 300*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through a blackhole: %v, want a timeout with the connection open", err)
	}
	// A new connection is accepted and held too.
	c2 := dial(t, p)
	if _, err := roundTrip(t, c2, []byte("x"), 200*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection through a blackhole: %v, want a timeout", err)
	}
	if err := p.Set(Mode{}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("during"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "during" {
		t.Fatalf("after healing: %q, %v; want the held bytes", got, err)
	}
	if got, err := roundTrip(t, c, []byte("after"), 5*time.Second); err != nil || string(got) != "after" {
		t.Fatalf("after healing: %q, %v", got, err)
	}
}

func TestLatencyDelaysEachWayInOrder(t *testing.T) {
	p := startProxy(t, echoServer(t))
	c := dial(t, p)
	m := Mode{Latency: 150 * time.Millisecond, Jitter: 50 * time.Millisecond}
	if err := p.Set(m); err != nil {
		t.Fatal(err)
	}
	var want []byte
	begin := time.Now()
	for i := range 50 {
		b := []byte{byte(i), byte(i >> 8)}
		want = append(want, b...)
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, len(want))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	took := time.Since(begin)
	if !bytes.Equal(got, want) {
		t.Fatalf("out of order: %v", got)
	}
	if lo := 2 * (m.Latency - m.Jitter); took < lo {
		t.Errorf("round trip %v, want at least %v (both ways delayed)", took, lo)
	}
}

func TestUpstreamDownClosesTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := startProxy(t, addr)
	c := dial(t, p)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a proxy to a dead server: %v, want the connection closed", err)
	}
}

func TestUpstreamCloseReachesTheClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("bye"))
			c.Close()
		}
	}()
	p := startProxy(t, ln.Addr().String())
	c := dial(t, p)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "bye" {
		t.Fatalf("read %q, %v; want \"bye\" then the end", got, err)
	}
}

func TestSetRefusesABadMode(t *testing.T) {
	p := startProxy(t, echoServer(t))
	if err := p.Set(Mode{Latency: 10 * time.Millisecond, Jitter: time.Second}); err == nil {
		t.Fatal("Set accepted a jitter larger than the latency")
	}
	if got := p.Mode(); got != (Mode{}) {
		t.Errorf("mode after a refused Set: %v, want pass", got)
	}
}

func TestListenAllKeepsTheScheme(t *testing.T) {
	up := echoServer(t)
	ps, urls, err := ListenAll([]string{"nats://" + up, up}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, p := range ps {
			p.Close()
		}
	}()
	if got, want := urls[0], "nats://"+ps[0].Addr(); got != want {
		t.Errorf("url %q, want %q", got, want)
	}
	if got, want := urls[1], ps[1].Addr(); got != want {
		t.Errorf("url %q, want %q", got, want)
	}
	c, err := net.Dial("tcp", ps[0].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(t, c, []byte("ping"), 5*time.Second); err != nil || string(got) != "ping" {
		t.Fatalf("through the proxy of a URL: %q, %v", got, err)
	}
}
