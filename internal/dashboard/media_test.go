package dashboard_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/dashboard"
	"github.com/chromedp/chromedp"
)

// pngOf returns a PNG of w×w pixels of seeded noise: it does not compress,
// so a large one is large.
func pngOf(w int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, w))
	r := rand.New(rand.NewPCG(1, 2))
	for y := 0; y < w; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(r.Uint32()), uint8(r.Uint32()), uint8(r.Uint32()), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, img)
	return b.Bytes()
}

// fileTool returns a small image inline, a large one (by reference once
// its worker's Offload puts it in the object store) and a CSV file it
// streams there itself.
func fileTool(ctx context.Context, c *agentfleet.Call) (*agentfleet.ToolResult, error) {
	csv, err := objref.Put(ctx, strings.NewReader(strings.Repeat("a,b\n", 1000)), "text/csv", "../../etc/report.csv")
	if err != nil {
		return nil, err
	}
	return &agentfleet.ToolResult{Content: []agentfleet.Content{
		agentfleet.Image(base64.StdEncoding.EncodeToString(pngOf(8)), "image/png"),
		agentfleet.Image(base64.StdEncoding.EncodeToString(pngOf(300)), "image/png"),
		csv,
	}}, nil
}

// TestFilesInBrowser: a result's inline image and its image kept by
// reference are shown in the page (loaded: naturalWidth > 0), and its CSV
// is offered for download, served as an attachment under a name without
// path.
func TestFilesInBrowser(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ctx := browser(t)
	if m := f.ask(t, "files", "file"); m.StopReason != agentfleet.StopReasonStop {
		t.Fatalf("ask: %s (%s)", m.StopReason, m.ErrorMessage)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(f.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the replay", `document.body.dataset.replayed === 'true'`, 10*time.Second)
	show(t, ctx, "files")
	waitJS(t, ctx, "the file call", `document.querySelector('#run[data-session="files"] .tool[data-tool="file"][data-outcome="ok"]')`, 10*time.Second)
	waitJS(t, ctx, "two images shown", `[...document.querySelectorAll('#run[data-session="files"] .tool[data-tool="file"] img.result-image')].filter(i => i.complete && i.naturalWidth > 0).length === 2`, 20*time.Second)
	if w := evalJS[int](t, ctx, `document.querySelector('#run .result-file img.result-image').naturalWidth`); w != 300 {
		t.Errorf("the image by reference is %d pixels wide, want 300", w)
	}
	href := evalJS[string](t, ctx, `[...document.querySelectorAll('#run a.download')].find(a => a.textContent.includes('text/csv')).href`)
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("Content-Disposition") != `attachment; filename=.._.._etc_report.csv` || len(body) != 4000 {
		t.Errorf("download: %d %q %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"), len(body))
	}
}

// TestObjectRouteRefusesBadRefs: GET /api/object answers only objects of
// the fleet's bucket, with the reason otherwise; an SVG is never served
// as an image.
func TestObjectRouteRefusesBadRefs(t *testing.T) {
	f := startFleet(t, dashboard.Options{})
	ctx := context.Background()
	svg, err := f.objects.Put(ctx, objref.Meta{Agent: "default", Session: "s", MIMEType: "image/svg+xml", Name: "x.svg"}, strings.NewReader(`<svg onload="alert(1)"/>`), 1<<20, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref, want string
		status    int
	}{
		{"", "does not start with obj://", 400},
		{"obj://KV_agent_tools/x", `bucket "KV_agent_tools" is not the fleet's`, 400},
		{"obj://agentfleet_objects/default/s/nope", "not found", 404},
		{"obj://agentfleet_objects/a\r\nb", "control character", 400},
		{svg.Ref, "", 200},
	} {
		resp, err := http.Get(f.url + "/api/object?ref=" + url.QueryEscape(tc.ref))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
			t.Errorf("%q: %d %q, want %d %q", tc.ref, resp.StatusCode, body, tc.status, tc.want)
		}
		if tc.status == 200 && (resp.Header.Get("Content-Type") != "application/octet-stream" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment")) {
			t.Errorf("svg served as %q, %q", resp.Header.Get("Content-Type"), resp.Header.Get("Content-Disposition"))
		}
	}
}
