package dashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentfleet/agentfleet/internal/bus/objref"
)

// Objects opens the objects that results refer to (objref.Store).
type Objects interface {
	Open(ctx context.Context, ref string) (io.ReadCloser, objref.Info, error)
}

// inlineImages are the image types the page shows inline; any other
// object, SVG included (it may hold scripts), is sent as an attachment.
var inlineImages = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// serveObject streams the object of the query's ref: an image the page
// shows inline, anything else as a download. A ref that is not one of the
// fleet's bucket is refused with 400, a missing object with 404.
func (h *Handler) serveObject(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Objects == nil {
		http.Error(w, "no object store: the NATS server has no JetStream, or this user may not read the bucket "+objref.DefaultBucket, http.StatusNotFound)
		return
	}
	ref := r.URL.Query().Get("ref")
	rc, info, err := h.cfg.Objects.Open(r.Context(), ref)
	switch {
	case errors.Is(err, objref.ErrNotFound):
		http.Error(w, fmt.Sprintf("ref: %v", err), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, fmt.Sprintf("ref: %v", err), http.StatusBadRequest)
		return
	}
	defer rc.Close()
	mt, _, _ := mime.ParseMediaType(info.MIMEType)
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	if inlineImages[mt] {
		w.Header().Set("Content-Type", mt)
	} else {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": fileName(info)}))
	}
	io.Copy(w, rc) // a digest that does not match cuts the stream short
}

// fileName returns the name a download is saved as: the object's file
// name, else the last part of its name, without path separators.
func fileName(info objref.Info) string {
	name := info.FileName
	if name == "" {
		name = info.Name[strings.LastIndexByte(info.Name, '/')+1:]
	}
	name = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, name)
	if name == "" || name == "." || name == ".." {
		name = "file"
	}
	return name
}
