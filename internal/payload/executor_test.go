package payload_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/payload"
	"github.com/agentfleet/agentfleet/internal/pipeline"
)

// TestModelGetsABoundedView: the results' ref blocks are checked against
// the store and followed by a bounded view: the head of a text file, an
// image inline, nothing but the description for other media. A ref whose
// size or digest the worker misstated is corrected from the store; one to
// another session's object, or to none, fails the call.
func TestModelGetsABoundedView(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := objref.OpenOn(ctx, bustest.MustConnect(t, srv), objref.Config{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(session, mime string, data []byte) agentfleet.Content {
		ref, err := st.Put(ctx, objref.Meta{Agent: "default", Session: session, MIMEType: mime}, bytes.NewReader(data), 1<<30, "test")
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	csv := bytes.Repeat([]byte("a,b,c\n"), 1<<20)
	png := []byte("\x89PNG fake image bytes")
	textRef := put("s1", "text/csv", csv)
	imgRef := put("s1", "image/png", png)
	pdfRef := put("s1", "application/pdf", []byte("%PDF-1.7"))
	otherRef := put("s2", "text/plain", []byte("another session's secret"))
	lying := textRef
	lying.Size, lying.SHA256 = 3, strings.Repeat("0", 64)
	missing := textRef
	missing.Ref = "obj://" + objref.DefaultBucket + "/default/s1/none"

	run := func(blocks ...agentfleet.Content) (*agentfleet.ToolResult, error) {
		e := payload.Executor{Store: st, View: payload.ViewConfig{TextBytes: 1000}, Next: pipeline.ExecutorFunc(func(context.Context, *pipeline.Prepared, pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
			return &agentfleet.ToolResult{Content: append([]agentfleet.Content(nil), blocks...)}, nil
		})}
		return e.Execute(ctx, &pipeline.Prepared{Call: agentfleet.ToolCall{Name: "files"}, Agent: "default", Session: "s1"}, nil)
	}
	res, err := run(agentfleet.Text("files:"), textRef, imgRef, pdfRef, lying)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Content
	if len(c) != 8 {
		t.Fatalf("%d blocks, want 8: %+v", len(c), c)
	}
	if c[1].Type != agentfleet.ContentRef || c[2].Type != agentfleet.ContentText || len(c[2].Text) > 1100 || !strings.HasPrefix(c[2].Text, "a,b,c\n") || !strings.Contains(c[2].Text, "the first 1000 of 6291456 bytes") {
		t.Errorf("text view: %+v", c[1:3])
	}
	if c[4].Type != agentfleet.ContentImage || c[4].Data != base64.StdEncoding.EncodeToString(png) {
		t.Errorf("image view: %+v", c[4])
	}
	if c[5].Type != agentfleet.ContentRef || c[6].Type != agentfleet.ContentRef {
		t.Errorf("pdf has a view: %+v", c[5:7])
	}
	if c[6].Size != textRef.Size || c[6].SHA256 != textRef.SHA256 {
		t.Errorf("a misstated ref kept size %d sha %s, want the store's %d %s", c[6].Size, c[6].SHA256, textRef.Size, textRef.SHA256)
	}
	for _, tc := range []struct {
		ref  agentfleet.Content
		want string
	}{
		{otherRef, "is not an object of this session"},
		{missing, "not found"},
	} {
		if _, err := run(tc.ref); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "Tool files: content[0]") {
			t.Errorf("%s: err = %v, want %q", tc.ref.Ref, err, tc.want)
		}
	}
	nostore := payload.Executor{Next: pipeline.ExecutorFunc(func(context.Context, *pipeline.Prepared, pipeline.ProgressFunc) (*agentfleet.ToolResult, error) {
		return &agentfleet.ToolResult{Content: []agentfleet.Content{textRef}}, nil
	})}
	if _, err := nostore.Execute(ctx, &pipeline.Prepared{Agent: "default", Session: "s1"}, nil); err == nil || !strings.Contains(err.Error(), "no JetStream") {
		t.Errorf("no store: err = %v", err)
	}
}
