package scriptfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/script"
	"github.com/agentfleet/agentfleet/internal/scripts"
	"github.com/nats-io/nats.go"
)

// write_tool's dry run runs model-written code, so it runs where scripted
// tools run, on a script worker, and never in the orchestrator: a script
// that crashes its process (a bug of a builtin that no bound foresaw) then
// takes down one worker, which its supervisor restarts, instead of the
// orchestrator and every session it holds. The orchestrator sends the
// definition as a NATS request on DryRunSubject; one script worker of the
// queue group runs it under its own limits (those its calls will have) and
// answers with the outcome.

// DryRunQueue is the queue group of the script workers' dry-run service.
const DryRunQueue = "scripts"

// DefaultDryRunTimeout bounds a dry run requested by RemoteDryRun when the
// caller's context has no deadline: time for prepare, validate and execute
// at the default time limit each, and the round trip.
const DefaultDryRunTimeout = 30 * time.Second

// DryRunSubject returns the subject of the dry-run service under prefix.
func DryRunSubject(prefix string) string { return prefix + ".scripts.dryrun" }

// dryRunRequest is the body of a dry-run request.
type dryRunRequest struct {
	Definition *script.Definition `json:"definition"`
}

// ErrNoScriptWorker is wrapped by the error of a dry run that no script
// worker answered.
var ErrNoScriptWorker = errors.New("no script worker answered the dry run")

// RemoteDryRun returns a DryRunner that sends each dry run to a script
// worker of prefix over nc. It fails with an error wrapping
// ErrNoScriptWorker when no worker serves scripts, saying what to start;
// it never runs the script itself.
func RemoteDryRun(nc *nats.Conn, prefix string) script.DryRunner {
	subject := DryRunSubject(prefix)
	return script.DryRunFunc(func(ctx context.Context, def *script.Definition) error {
		body, err := json.Marshal(&dryRunRequest{Definition: def})
		if err != nil {
			return fmt.Errorf("%s: dry run: %w", def.Name, err)
		}
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, DefaultDryRunTimeout)
			defer cancel()
		}
		msg, err := nc.RequestWithContext(ctx, subject, body)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return fmt.Errorf("%s: %w on %s: the dry run runs the script on a tool worker started with --scripts, never in the orchestrator; start one and write the tool again", def.Name, ErrNoScriptWorker, subject)
		case err != nil:
			return fmt.Errorf("%s: the dry run on a script worker failed: %w", def.Name, err)
		}
		var r scripts.ErrorReply
		if err := json.Unmarshal(msg.Data, &r); err != nil {
			return fmt.Errorf("%s: the script worker's dry-run reply is not JSON: %w", def.Name, err)
		}
		return r.Err()
	})
}

// serveDryRuns subscribes the server's dry-run service. Each request runs
// in a goroutine of its own, at most cfg.Concurrency at once, under the
// server's limits, and ends when the server closes.
func (s *Server) serveDryRuns(ctx context.Context) error {
	slots := make(chan struct{}, max(s.cfg.Concurrency, 1))
	replies := bus.ReplyGuard{}
	sub, err := s.nc.QueueSubscribe(DryRunSubject(s.subjects.Prefix), DryRunQueue, func(m *nats.Msg) {
		if err := replies.Check(m.Reply); err != nil {
			// Not run, not answered: the answer would be published with
			// the worker's rights on a subject of the sender's choosing.
			s.log.Warn("dry run refused", "err", err)
			return
		}
		var req dryRunRequest
		if err := json.Unmarshal(m.Data, &req); err != nil || req.Definition == nil {
			m.Respond(scripts.EncodeError(fmt.Errorf(`dry run: the request is not {"definition": {...}}: %v`, err)))
			return
		}
		s.dryRuns.Add(1)
		go func() {
			defer s.dryRuns.Done()
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				m.Respond(scripts.EncodeError(fmt.Errorf("%s: the script worker is stopping; write the tool again", req.Definition.Name)))
				return
			}
			err := s.runDryRun(ctx, req.Definition)
			if rerr := m.Respond(scripts.EncodeError(err)); rerr != nil {
				s.log.Warn("answering a dry run", "tool", req.Definition.Name, "err", rerr)
			}
		}()
	})
	if err != nil {
		return fmt.Errorf("script server: dry-run service: %w", err)
	}
	s.dryRunSub = sub
	return nil
}

// runDryRun runs the dry run of def under the server's limits, in a child
// process with process isolation.
func (s *Server) runDryRun(ctx context.Context, def *script.Definition) error {
	// Room in the memory budget comes as the calls running end, within
	// their time limits.
	rctx, cancel := context.WithTimeout(ctx, 3*max(s.env.Timeout, script.DefaultTimeout))
	release, err := s.reserve(rctx, def.Name+": dry run")
	cancel()
	if err != nil {
		return err
	}
	defer release()
	if s.runner != nil {
		return s.runner.DryRun(ctx, def)
	}
	return script.DryRun(ctx, def, s.env)
}
