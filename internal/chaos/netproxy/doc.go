// Package netproxy is the chaos harness's fault proxy: a TCP proxy that
// stands between one client (an orchestrator) and one server (a
// nats-server) and passes the bytes, holds them (a blackhole: the
// connections stay open, nothing moves in either direction, no RST, as in a
// network partition that TCP rides out), or delays them by a latency with
// jitter, each direction on its own, in order.
//
// What happens to a chunk of bytes is decided by pure functions of the mode
// and a random draw (schedule.go, table-tested); proxy.go only carries the
// decisions out on sockets.
package netproxy
