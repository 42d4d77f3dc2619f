package objref_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLargeResultTravelsByReference: a Go worker streams a 20 MB file
// into the store and returns its reference, and returns an image of 2 MB
// inline that Offload puts there; the client gets ref blocks, and each
// object read back is whole (sha256).
func TestLargeResultTravelsByReference(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	st := openStore(t, srv, objref.Limits{})
	const size = 20 << 20
	want, _ := sumOf(t, seeded(1, size))
	img := make([]byte, 2<<20)
	seeded(2, int64(len(img))).Read(img)
	wantImg, _ := sumOf(t, strings.NewReader(string(img)))
	c := serve(t, srv, st,
		tool("export", func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ref, err := objref.Put(ctx, seeded(1, size), "text/csv", "export.csv")
			if err != nil {
				return nil, err
			}
			return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Text("here it is"), ref}}, nil
		}),
		tool("screenshot", func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return &agentfleet.ToolResult{Content: []agentfleet.Content{agentfleet.Image(base64.StdEncoding.EncodeToString(img), "image/png")}}, nil
		}),
	)
	for _, tc := range []struct {
		tool, sha, mime string
		size            int64
	}{
		{"export", want, "text/csv", size},
		{"screenshot", wantImg, "image/png", int64(len(img))},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := call(t, c, tc.tool, "s1")
			if err != nil {
				t.Fatal(err)
			}
			ref := res.Content[len(res.Content)-1]
			if ref.Type != agentfleet.ContentRef || ref.Size != tc.size || ref.SHA256 != tc.sha || ref.MIMEType != tc.mime {
				t.Fatalf("block = %+v, want a ref of %d bytes, sha256 %s, %s", ref, tc.size, tc.sha, tc.mime)
			}
			if err := ref.Validate(); err != nil {
				t.Fatal(err)
			}
			r, info, err := st.Open(context.Background(), ref.Ref)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got, n := sumOf(t, r)
			if got != tc.sha || n != tc.size || info.SHA256 != tc.sha {
				t.Errorf("read back %d bytes, sha256 %s (info %s), want %d, %s", n, got, info.SHA256, tc.size, tc.sha)
			}
		})
	}
	if n, err := st.SessionBytes(context.Background(), "default", "s1"); err != nil || n != size+int64(len(img)) {
		t.Errorf("session bytes = %d, %v, want %d", n, err, size+len(img))
	}
}

// TestLimitsAreRefused: a result over the per-call limit, or one that
// would take a session past its limit, is an error naming the limit, and
// leaves no object behind.
func TestLimitsAreRefused(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	st := openStore(t, srv, objref.Limits{Threshold: 1 << 10, MaxCall: 1 << 20, MaxSession: 3 << 19})
	c := serve(t, srv, st,
		tool("huge", func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
			return agentfleet.TextResult(strings.Repeat("x", 2<<20)), nil
		}),
		tool("half", func(ctx context.Context, _ *agentfleet.Call) (*agentfleet.ToolResult, error) {
			ref, err := objref.Put(ctx, seeded(3, 1<<19+1), "application/octet-stream", "")
			return &agentfleet.ToolResult{Content: []agentfleet.Content{ref}}, err
		}),
	)
	_, err := call(t, c, "huge", "s1")
	if err == nil || !strings.Contains(err.Error(), "over the per-call limit of 1048576 bytes") || !strings.Contains(err.Error(), "content[0] of 2097152 bytes") {
		t.Errorf("huge: err = %v, want the per-call limit named", err)
	}
	for i, want := range []string{"", "", "over the session's limit of 1572864 bytes (1048578 used)"} {
		_, err := call(t, c, "half", "s2")
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("half #%d: err = %v, want %q", i+1, err, want)
		}
	}
	if n, _ := st.SessionBytes(context.Background(), "default", "s1"); n != 0 {
		t.Errorf("session s1 holds %d bytes after a refused result, want 0", n)
	}
	if n, _ := st.SessionBytes(context.Background(), "default", "s2"); n != 2*(1<<19+1) {
		t.Errorf("session s2 holds %d bytes, want the two results that fit", n)
	}
}

// TestDeleteSession: deleting a session's objects deletes those and no
// other session's.
func TestDeleteSession(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	st := openStore(t, srv, objref.Limits{})
	ctx := context.Background()
	var refs []agentfleet.Content
	for _, s := range []string{"a", "a", "b"} {
		ref, err := st.Put(ctx, objref.Meta{Agent: "default", Session: s}, seeded(4, 300<<10), 1<<30, "test")
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	if n, err := st.DeleteSession(ctx, "default", "a"); n != 2 || err != nil {
		t.Fatalf("deleted %d, %v, want 2", n, err)
	}
	for i, ref := range refs {
		_, err := st.Stat(ctx, ref.Ref)
		if gone := errors.Is(err, jetstream.ErrObjectNotFound); gone != (i < 2) {
			t.Errorf("object %d: stat err = %v, want gone: %v", i, err, i < 2)
		}
	}
}

// TestHostileRefs: a reference outside the fleet's bucket, or that is not
// a reference, is refused with what is wrong; nothing is read.
func TestHostileRefs(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	st := openStore(t, srv, objref.Limits{})
	for _, tc := range []struct{ ref, want string }{
		{"obj://secrets/x", `bucket "secrets" is not the fleet's`},
		{"http://example.com/x", "does not start with obj://"},
		{"obj://agentfleet_objects/", "is not obj://<bucket>/<name>"},
		{"obj://agentfleet_objects/a\nb", "control character"},
		{"obj://agent.fleet/x", "is not letters, digits"},
		{"obj://agentfleet_objects/" + strings.Repeat("n", 2000), "over the bound of 1024"},
		{"obj://agentfleet_objects/default/s/none", "not found"},
	} {
		if _, err := st.Stat(context.Background(), tc.ref); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: err = %v, want %q", tc.ref, err, tc.want)
		}
	}
}

// TestKilledUploadLeavesNothing: a worker process killed with SIGKILL in
// the middle of an upload leaves chunks in the bucket's stream but no
// object: none is listed, and its name is not found.
func TestKilledUploadLeavesNothing(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	st := openStore(t, srv, objref.Limits{})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OBJREF_UPLOADER_URL="+srv.ClientURL())
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	for i := 0; i < 40; i++ { // 5 MiB read and sent
		if !lines.Scan() {
			t.Fatalf("the uploader stopped: %v", lines.Err())
		}
	}
	js, _ := jetstream.New(bustest.MustConnect(t, srv))
	stream, err := js.Stream(context.Background(), "OBJ_"+objref.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "chunks stored", func() bool {
		info, err := stream.Info(context.Background())
		return err == nil && info.State.Msgs > 8
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	info, _ := stream.Info(context.Background())
	if n, err := st.SessionBytes(context.Background(), "default", "doomed"); n != 0 || err != nil {
		t.Errorf("the killed upload's session holds %d bytes (%v), want none", n, err)
	}
	obs, _ := js.ObjectStore(context.Background(), objref.DefaultBucket)
	if list, err := obs.List(context.Background()); !errors.Is(err, jetstream.ErrNoObjectsFound) {
		t.Errorf("objects listed after a killed upload: %v, %v", list, err)
	}
	if info.State.Msgs == 0 {
		t.Errorf("no chunks in the stream: the test did not cut an upload short")
	}
}
