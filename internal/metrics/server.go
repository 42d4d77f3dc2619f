package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the HTTP listener of a process's operational endpoints:
//
//   - /metrics: the metrics of a registry, in the Prometheus text format
//     (or OpenMetrics when the scraper asks for it);
//   - /healthz: 200 "ok" for as long as the process serves HTTP at all
//     (a liveness probe);
//   - /readyz: 200 "ok" while the ready func returns nil, else 503 with
//     the error's text (a readiness probe).
//
// The methods of a nil *Server do nothing, so that a listener turned off
// (an empty address) needs no special case.
type Server struct {
	ln    net.Listener
	srv   *http.Server
	mux   *http.ServeMux
	ready func() error

	serveErr chan error // the error of Serve, once it returns
	once     sync.Once
	err      error

	// fresh are the connections that have sent no request yet (a client's
	// spare connection, a browser's preconnect): Shutdown closes them at
	// once, where http.Server would wait up to 5 s for each.
	connMu   sync.Mutex
	fresh    map[net.Conn]struct{}
	stopping bool
}

// Listen binds addr at once and serves g's metrics and the probes on it in
// a goroutine. ready reports whether the process is ready to work (for the
// orchestrator: connected to NATS, tools discovered, a model configured);
// nil means always ready. It is called on every request to /readyz, from
// the server's goroutines, so it must be quick and safe for concurrent use. flag names the command-line flag that gave addr,
// so that a bind failure is a clear start-up error such as
//
//	--http 127.0.0.1:8080: address already in use
//
// (errors.Is(err, syscall.EADDRINUSE) holds for that one). An empty addr
// turns the listener off: Listen returns a nil *Server and no error.
func Listen(addr, flag string, g prometheus.Gatherer, ready func() error) (*Server, error) {
	return ListenWrapped(addr, flag, g, ready, nil)
}

// ListenWrapped is Listen with every request, to every route (the probes
// and those added by Handle included), handed to wrap(mux) rather than to
// the mux: a guard that checks them (httpauth.Guard.Wrap). A nil wrap is
// Listen.
func ListenWrapped(addr, flag string, g prometheus.Gatherer, ready func() error, wrap func(http.Handler) http.Handler) (*Server, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, listenError(flag, addr, err)
	}
	mux := http.NewServeMux()
	s := &Server{ln: ln, mux: mux, ready: ready, serveErr: make(chan error, 1)}
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		// A collector that fails costs its own metrics, not the scrape.
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", s.serveReady)
	var h http.Handler = mux
	if wrap != nil {
		h = wrap(mux)
	}
	s.srv = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ConnState:         s.connState,
	}
	go func() { s.serveErr <- s.srv.Serve(ln) }()
	return s, nil
}

// listenError names the flag and the address, and keeps the cause alone
// ("address already in use" rather than "listen tcp ...: bind: ...").
func listenError(flag, addr string, err error) error {
	cause := err
	var op *net.OpError
	if errors.As(cause, &op) {
		cause = op.Err
	}
	var sc *os.SyscallError
	if errors.As(cause, &sc) {
		cause = sc.Err
	}
	if flag == "" {
		return fmt.Errorf("listen on %s: %w", addr, cause)
	}
	return fmt.Errorf("--%s %s: %w", flag, addr, cause)
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	if s.ready != nil {
		if err := s.ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, err.Error())
			return
		}
	}
	writeText(w, http.StatusOK, "ok")
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	fmt.Fprintln(w, text)
}

// Handle serves h at pattern beside the operational endpoints, as
// http.ServeMux.Handle does (it panics on a pattern that conflicts with
// theirs). It may be called while the server serves, so that a handler
// that needs what the process sets up after binding (the dashboard needs
// NATS) joins the listener bound first. A nil Server ignores it.
func (s *Server) Handle(pattern string, h http.Handler) {
	if s == nil {
		return
	}
	s.mux.Handle(pattern, h)
}

// Addr returns the address the server listens on, with the port chosen
// when addr gave port 0; "" for a nil Server.
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting connections and waits, until ctx ends, for the
// requests being served to finish; then it closes the rest. It returns
// ctx's error if it had to cut requests short, and the error that stopped
// serving, if any. Calls after the first Shutdown or Close return the
// first one's result.
func (s *Server) Shutdown(ctx context.Context) error {
	if s == nil {
		return nil
	}
	return s.stop(func() error {
		s.closeFresh()
		err := s.srv.Shutdown(ctx)
		if err != nil {
			err = errors.Join(err, s.srv.Close())
		}
		return err
	})
}

// Close stops the server at once, closing the connections being served.
func (s *Server) Close() error {
	if s == nil {
		return nil
	}
	return s.stop(s.srv.Close)
}

func (s *Server) stop(f func() error) error {
	s.once.Do(func() {
		err := f()
		if serr := <-s.serveErr; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		s.err = err
	})
	return s.err
}

// connState keeps the set of connections that have sent no request.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	if st != http.StateNew {
		delete(s.fresh, c)
		return
	}
	if s.stopping {
		c.Close()
		return
	}
	if s.fresh == nil {
		s.fresh = map[net.Conn]struct{}{}
	}
	s.fresh[c] = struct{}{}
}

// closeFresh closes the connections that have sent no request, and any
// that comes from now on: a stopping server has nothing to serve them,
// and waiting for them would hold its shutdown for no request at all.
func (s *Server) closeFresh() {
	s.connMu.Lock()
	defer s.connMu.Unlock()
	s.stopping = true
	for c := range s.fresh {
		c.Close()
	}
	clear(s.fresh)
}
