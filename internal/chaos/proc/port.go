package proc

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// FreePort returns a loopback TCP port that is free now. The harness
// chooses ports itself so that a restarted process keeps its address.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// The ports handed out are bound later, by the children: a port
		// freed here can come back from the next call before its process
		// has bound it (a worker's HTTP port was once the NATS port).
		handedMu.Lock()
		taken := handed[port]
		handed[port] = true
		handedMu.Unlock()
		if !taken {
			return port, nil
		}
	}
	return 0, errors.New("free port: every port the system gave was handed out already")
}

// Listen listens on a loopback port that FreePort has not handed out and
// will not hand out later: a listener of the harness's own (a proxy) must
// not take the port a child is yet to bind (an orchestrator's HTTP port
// was once a proxy's, and the orchestrator could not start).
func Listen() (net.Listener, error) {
	var refused []net.Listener
	defer func() {
		for _, l := range refused {
			l.Close()
		}
	}()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		handedMu.Lock()
		taken := handed[port]
		handed[port] = true
		handedMu.Unlock()
		if !taken {
			return l, nil
		}
		refused = append(refused, l) // held until a free one comes
	}
	return nil, errors.New("listen: every port the system gave was handed out already")
}

var (
	handedMu sync.Mutex
	handed   = map[int]bool{} // ports freePort returned, for this process's life
)
