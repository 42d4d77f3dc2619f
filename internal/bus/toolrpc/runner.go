package toolrpc

import "time"

// runnerIdle is how long the goroutine of a finished call waits for the
// next call before it exits.
const runnerIdle = time.Second

// A call runs in one goroutine, a runner, which then waits runnerIdle for
// the next call of the worker: a busy worker starts no goroutine per call,
// and its calls run on stacks already grown, instead of each growing a new
// goroutine's stack as it encodes and publishes its result.

// start runs c on an idle runner, or on a new one.
func (s *ToolServer) start(c *call) {
	select {
	case s.idle <- c:
	default:
		go s.runner(c)
	}
}

// runner runs c, then the calls start hands it, until it waited runnerIdle
// for one or the server stopped.
func (s *ToolServer) runner(c *call) {
	var t *time.Timer
	for {
		c.run()
		if t == nil {
			t = time.NewTimer(runnerIdle)
		} else {
			t.Reset(runnerIdle)
		}
		select {
		case c = <-s.idle:
			t.Stop()
		case <-t.C:
			return
		case <-s.stopped:
			t.Stop()
			return
		}
	}
}
