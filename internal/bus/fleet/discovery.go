package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// FleetTool is a tool the fleet offers, and the workers that serve it.
type FleetTool struct {
	agentfleet.ToolDef
	Workers []string
	// Concurrency is the sum of the concurrency the Workers advertise
	// (service metadata MetaConcurrency); 0 when one of them advertises
	// none, and the fleet's capacity for the tool is unknown.
	Concurrency int
}

// Discover asks every micro service on nc for its info ($SRV.INFO) once and
// returns the tools that workers of this prefix serve, by name. It waits up
// to wait for the first answer and then until answers stop coming for a
// short while. Between definitions of one tool, and between workers of
// different kinds, it chooses as the Fleet watcher does.
func Discover(ctx context.Context, nc *nats.Conn, subjects bus.Subjects, wait time.Duration) (map[string]*FleetTool, error) {
	members := map[string]*member{}
	err := infoRound(ctx, nc, wait, min(wait, 100*time.Millisecond), func(info *micro.Info) {
		if m, _ := memberFromInfo(info, subjects); m != nil {
			members[m.id] = m
		}
	})
	if err != nil {
		return nil, err
	}
	tools, _ := resolve(members)
	return tools, nil
}

// infoRound publishes one $SRV.INFO request and hands each answer to fn, in
// order, until no answer came within first, or answers stopped for quiet
// (quiet 0: until first has passed, whatever came). Only ctx ending is an
// error.
func infoRound(ctx context.Context, nc *nats.Conn, first, quiet time.Duration, fn func(*micro.Info)) error {
	return srvRound(ctx, nc, "$SRV.INFO", "discover", first, quiet, fn)
}

// srvRound publishes one request on a micro discovery subject ($SRV.INFO,
// $SRV.STATS) and hands each answer that decodes as a T to fn, as
// infoRound says; what names the round in errors.
func srvRound[T any](ctx context.Context, nc *nats.Conn, subject, what string, first, quiet time.Duration, fn func(*T)) error {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	deadline := time.Now().Add(first)
	for got := false; ; {
		until := deadline
		if got && quiet > 0 {
			until = time.Now().Add(quiet)
		}
		mctx, cancel := context.WithDeadline(ctx, until)
		m, err := sub.NextMsgWithContext(mctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", what, ctx.Err())
			}
			return nil // no more answers
		}
		var v T
		if len(m.Data) == 0 || json.Unmarshal(m.Data, &v) != nil {
			continue // a no-responders status, or not an answer
		}
		got = true
		fn(&v)
	}
}
