package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// ResponderConfig configures the responder child process: the baseline of
// the dispatch benchmark, a plain NATS request-reply service that decodes a
// MessagePack call and answers with a MessagePack result, with nothing of
// the tool protocol (no ack, no heartbeats, no concurrency limit, no events).
type ResponderConfig struct {
	Subject    string
	CPUProfile string
}

func (c *ResponderConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Subject, "subject", rawSubject, "subject to answer on")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a CPU profile of the responder to this file")
}

// rawSubject is the default subject of the raw responder.
const rawSubject = "fleetbench.raw"

func (m *Main) runResponder(ctx context.Context) (err error) {
	if m.Responder.CPUProfile != "" {
		stop, err := startCPUProfile(m.Responder.CPUProfile)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, stop()) }()
	}
	nc, err := bus.Connect(bus.ConnectConfig{URL: m.NATSURL, Name: "fleetbench-responder", Logger: m.logger})
	if err != nil {
		return err
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync(m.Responder.Subject)
	if err != nil {
		return err
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return err
	}
	if err := nc.Flush(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		for {
			msg, err := sub.NextMsgWithContext(context.Background())
			if err != nil {
				done <- nil // unsubscribed
				return
			}
			b, err := answerRaw(msg.Data)
			if err != nil {
				done <- err
				return
			}
			if err := msg.Respond(b); err != nil {
				done <- err
				return
			}
		}
	}()
	m.serveUntilParentGoes(ctx, "responder")
	err = sub.Unsubscribe()
	return errors.Join(err, <-done)
}

// answerRaw is the whole work of the raw responder: decode the call, answer
// with its text.
func answerRaw(data []byte) ([]byte, error) {
	var req wire.CallRequest
	if err := msgpack.Unmarshal(data, &req); err != nil {
		return nil, fmt.Errorf("responder: request: %w", err)
	}
	text, _ := req.Args["text"].(string)
	return msgpack.Marshal(agentfleet.TextResult(text))
}
