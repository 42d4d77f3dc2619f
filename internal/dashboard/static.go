package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// The page: plain JavaScript and CSS, served as they are in the
// repository, with no build step.
//
//go:embed static
var static embed.FS

// staticFiles serves the page's files, index.html at "/".
func staticFiles() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	fsrv := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		fsrv.ServeHTTP(w, r)
	})
}
