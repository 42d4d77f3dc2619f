package toolrpc

import "github.com/agentfleet/agentfleet/internal/retry"

// busyBackoff is the wait before a call refused as busy is sent again:
// after its n-th refusal (from 1) a random duration up to BusyBackoff
// doubled once per earlier refusal, capped at MaxBusyBackoff (full jitter),
// so that refused calls spread out instead of coming back together.
func busyBackoff(cfg ClientConfig) retry.Policy {
	return retry.Policy{Base: cfg.BusyBackoff, Max: cfg.MaxBusyBackoff}
}

// lostBackoff is the retry of an attempt that timed out or whose worker was
// lost: up to MaxAttempts attempts, the wait after attempt n RetryBackoff
// doubled n-1 times, drawn from its upper half (equal jitter).
func lostBackoff(cfg ClientConfig) retry.Policy {
	return retry.Policy{Base: cfg.RetryBackoff, Jitter: retry.EqualJitter, MaxAttempts: cfg.MaxAttempts}
}
