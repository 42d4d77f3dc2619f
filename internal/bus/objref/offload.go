package objref

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
)

// Offload returns a copy of t whose results travel by reference where
// they are large: each text or image block of a result over the Store's
// threshold is put in the bucket and replaced by its ref block. The
// handler also finds the Store in its context (Put), so that it can
// stream a file of its own. A result over a limit becomes an error
// result that names the limit; one that cannot be put in the store
// (no JetStream) fails, as it would inline, at the max payload.
//
// With st nil, Offload returns t.
func Offload(t *agentfleet.Tool, st *Store) *agentfleet.Tool {
	if st == nil || t.Handler == nil {
		return t
	}
	c := *t
	next := t.Handler
	c.Handler = agentfleet.HandlerFunc(func(ctx context.Context, call *agentfleet.Call) (*agentfleet.ToolResult, error) {
		cs := &callStore{st: st, call: call}
		if caller, ok := toolrpc.CallerFrom(ctx); ok {
			cs.agent, cs.session, cs.run = caller.Agent, caller.Session, caller.RunID
		}
		res, err := next.Call(context.WithValue(ctx, storeKey{}, cs), call)
		if err != nil || res == nil {
			return res, err
		}
		if err := cs.offload(ctx, res); err != nil {
			return nil, fmt.Errorf("Tool %s: %w", call.Name, err)
		}
		return res, nil
	})
	return &c
}

type storeKey struct{}

// ErrNoStore is the error of Put in a call that has no object store.
var ErrNoStore = errors.New("no object store for this call: the worker has none (a NATS server without JetStream)")

// callStore is the Store as one call uses it: it counts what the call
// put.
type callStore struct {
	st             *Store
	call           *agentfleet.Call
	agent, session string
	run            string // the run that made the call, if it says
	mu             sync.Mutex
	used           int64
}

// Put streams r into the fleet's object store as a file of the call
// running in ctx (a handler wrapped by Offload), and returns the ref block
// to put in its result. The call's and the session's limits apply: an
// object over one fails with an error naming it (wrapping ErrTooLarge)
// and leaves nothing readable.
func Put(ctx context.Context, r io.Reader, mimeType, name string) (agentfleet.Content, error) {
	cs, ok := ctx.Value(storeKey{}).(*callStore)
	if !ok {
		return agentfleet.Content{}, ErrNoStore
	}
	return cs.put(ctx, r, mimeType, name)
}

func (cs *callStore) put(ctx context.Context, r io.Reader, mimeType, name string) (agentfleet.Content, error) {
	if cs.agent == "" || cs.session == "" {
		return agentfleet.Content{}, errors.New("the call names no agent and session to own its object")
	}
	sessionUsed, err := cs.st.SessionBytes(ctx, cs.agent, cs.session)
	if err != nil {
		return agentfleet.Content{}, err
	}
	cs.mu.Lock()
	used := cs.used
	cs.mu.Unlock()
	room, limit, err := cs.st.lim.Room(used, sessionUsed)
	if err != nil {
		return agentfleet.Content{}, err
	}
	ref, err := cs.st.Put(ctx, Meta{Agent: cs.agent, Session: cs.session, MIMEType: mimeType, Name: name, CallID: cs.call.ID}, r, room, limit)
	if err != nil {
		return ref, err
	}
	if err := cs.fence(ref); err != nil {
		return agentfleet.Content{}, err
	}
	cs.mu.Lock()
	cs.used += ref.Size
	cs.mu.Unlock()
	return ref, nil
}

// offload replaces the large blocks of res by references.
func (cs *callStore) offload(ctx context.Context, res *agentfleet.ToolResult) error {
	for i := range res.Content {
		c := &res.Content[i]
		var r io.Reader
		mime := c.MIMEType
		switch {
		case c.Type == agentfleet.ContentText && cs.st.lim.Offloaded(len(c.Text)):
			r, mime = strings.NewReader(c.Text), "text/plain; charset=utf-8"
		case c.Type == agentfleet.ContentImage && cs.st.lim.Offloaded(len(c.Data)):
			r = base64.NewDecoder(base64.StdEncoding, strings.NewReader(c.Data))
		default:
			continue
		}
		ref, err := cs.put(ctx, r, mime, c.Name)
		if err != nil {
			return fmt.Errorf("content[%d] of %d bytes: %w", i, max(len(c.Text), len(c.Data)), err)
		}
		*c = ref
	}
	return nil
}

// fence deletes the object of ref again when the call's run was stopped
// for a delete of its session (Store.MarkErased): the delete may have swept
// the session's objects before this one was stored. It is read after the
// object is stored, so that either the sweep finds the object or this
// finds the mark. A mark that cannot be read keeps the object.
func (cs *callStore) fence(ref agentfleet.Content) error {
	if cs.run == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	erased, err := cs.st.erased(ctx, cs.agent, cs.session, cs.run)
	if err != nil || !erased {
		return nil
	}
	name, err := cs.st.name(ref.Ref)
	if err == nil {
		err = cs.st.obs.Delete(ctx, name)
	}
	if err != nil {
		return fmt.Errorf("object of run %s: %w; deleting it again: %v", cs.run, ErrErased, err)
	}
	return fmt.Errorf("object of run %s: %w", cs.run, ErrErased)
}
