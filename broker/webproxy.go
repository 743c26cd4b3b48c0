package broker

import (
	"io/fs"
	"net/http"
	"os"
	"strings"
)

// WebProxyPath is where Handler serves Config.WebProxyDir.
const WebProxyPath = "/webproxy/"

// webProxyCSP narrows what a served page may do; each page's own policy
// (a meta element the build writes) narrows it further. The badge must be
// embeddable by any site, so no frame-ancestors.
const webProxyCSP = "default-src 'self'; connect-src 'self' https: wss:; object-src 'none'; base-uri 'none'; form-action 'none'"

// webProxyFiles serves the regular files under dir at WebProxyPath, for
// GET and HEAD: a directory's path serves its index.html, never a listing;
// symbolic links that leave dir, dot-dot paths and everything but regular
// files are 404. The files are static and small (the badge is at most
// 100 KiB in all), so they are not rate limited: the per-address
// connection limit bounds a client. Each request opens dir afresh, so the
// broker holds no descriptor for it and a rebuilt directory is served at
// once.
func webProxyFiles(dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, WebProxyPath)
		if name == "" || strings.HasSuffix(name, "/") {
			name += "index.html"
		}
		if !fs.ValidPath(name) {
			http.NotFound(w, r)
			return
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			http.Error(w, "web proxy files unavailable", http.StatusServiceUnavailable)
			return
		}
		defer root.Close()
		f, err := root.Open(name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", webProxyCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "public, max-age=3600")
		http.ServeContent(w, r, name, fi.ModTime(), f)
	})
}
