package payload

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// Executor is a pipeline.Executor that checks the ref blocks of the
// results of Next and adds the model's view of each after it.
type Executor struct {
	// Next runs the calls; it must not be nil.
	Next pipeline.Executor
	// Store is the fleet's object store; nil when the server has none, and
	// then a result with a ref block is an error result saying so.
	Store *objref.Store
	// View bounds what the model is shown of an object.
	View ViewConfig
}

var _ pipeline.Executor = Executor{}

// Execute implements pipeline.Executor.
func (e Executor) Execute(ctx context.Context, prep *pipeline.Prepared, progress pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
	res, err := e.Next.Execute(ctx, prep, progress)
	if err != nil || res == nil || !hasRef(res.Content) {
		return res, err
	}
	out := make([]agentfleet.Content, 0, len(res.Content)+1)
	for i, c := range res.Content {
		if c.Type != agentfleet.ContentRef {
			out = append(out, c)
			continue
		}
		blocks, err := e.check(ctx, prep, c)
		if err != nil {
			return nil, fmt.Errorf("Tool %s: content[%d]: %w", prep.Call.Name, i, err)
		}
		out = append(out, blocks...)
	}
	res.Content = out
	return res, nil
}

func hasRef(cs []agentfleet.Content) bool {
	for i := range cs {
		if cs[i].Type == agentfleet.ContentRef {
			return true
		}
	}
	return false
}

// check returns the ref block c as the store knows it, followed by the
// model's view of it; or why it is refused.
func (e Executor) check(ctx context.Context, prep *pipeline.Prepared, c agentfleet.Content) ([]agentfleet.Content, error) {
	if e.Store == nil {
		return nil, fmt.Errorf("%w: the result refers to %s", objref.ErrNoJetStream, c.Ref)
	}
	info, err := e.Store.Stat(ctx, c.Ref)
	if err != nil {
		return nil, err
	}
	if prefix := objref.SessionPrefix(prep.Agent, prep.Session); !strings.HasPrefix(info.Name, prefix) {
		return nil, fmt.Errorf("$ref %s is not an object of this session (its names start %s)", c.Ref, prefix)
	}
	if lim := e.Store.Limits(); info.Size > lim.MaxCall {
		return nil, fmt.Errorf("object %s of %d bytes is over the per-call limit of %d: %w", c.Ref, info.Size, lim.MaxCall, objref.ErrTooLarge)
	}
	c.Size, c.SHA256 = info.Size, info.SHA256
	if c.MIMEType == "" {
		c.MIMEType = info.MIMEType
	}
	view, n := e.View.Choose(c.MIMEType, c.Size)
	if view == ViewNone {
		return []agentfleet.Content{c}, nil
	}
	var head []byte
	if view == ViewImage {
		head, err = e.read(ctx, c.Ref, n, c.Size)
	} else {
		head, _, err = e.Store.Head(ctx, c.Ref, n)
	}
	if err != nil {
		return nil, err
	}
	if view == ViewImage {
		return []agentfleet.Content{c, agentfleet.Image(base64.StdEncoding.EncodeToString(head), c.MIMEType)}, nil
	}
	return []agentfleet.Content{c, agentfleet.Text(TextHead(head, c.Size))}, nil
}

// read returns the n bytes of the object of ref, of size bytes: all of
// them, so that the digest is checked.
func (e Executor) read(ctx context.Context, ref string, n, size int64) ([]byte, error) {
	r, _, err := e.Store.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]byte, n) // n is bounded by the view, not by the object
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("object %s: read the first %d bytes: %w", ref, n, err)
	}
	if n == size {
		// Read to the end, where the store checks the digest.
		if _, err := r.Read(make([]byte, 1)); err != io.EOF {
			return nil, fmt.Errorf("object %s: after its %d bytes: %v", ref, n, err)
		}
	}
	return buf, nil
}
