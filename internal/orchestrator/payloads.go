package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/payload"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// openObjects opens the fleet's object store of large payloads, when the
// server has JetStream; without it, a result that refers to an object is
// an error result saying there is no object store.
func (o *Orchestrator) openObjects(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := objref.OpenOn(ctx, o.nc, o.cfg.Objects)
	switch {
	case errors.Is(err, objref.ErrNoJetStream):
		o.log.Info("results cannot travel by reference: the NATS server has no JetStream", "bucket", objref.DefaultBucket)
	case err != nil:
		o.log.Warn("results cannot travel by reference", "err", err)
	}
	o.objects = st
}

// payloads wraps next so that the ref blocks of its results are checked
// and viewed for the model.
func (o *Orchestrator) payloads(next pipeline.Executor) pipeline.Executor {
	return payload.Executor{Next: next, Store: o.objects}
}
