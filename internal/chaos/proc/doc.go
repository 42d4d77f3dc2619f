// Package proc is the process harness of the fault-injection harness: it
// starts real programs as supervised child processes, logs their output,
// signals, kills and restarts them with the same command line, probes
// their readiness, hands out loopback ports that stay theirs across
// restarts, and waits on conditions with a deadline instead of sleeping.
//
// It imports only the standard library; it knows nothing of NATS, of the
// orchestrator or of what the children do.
package proc
