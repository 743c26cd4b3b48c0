package broker_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/broker"
)

// webProxyDir writes a small web proxy build: a page, a script, a
// directory with an index and one without, and a link leaving the tree.
func webProxyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	for name, content := range map[string]string{
		"badge.html":         "<!doctype html><title>badge</title>",
		"js/proxy.js":        "export const x = 1;\n",
		"sub/index.html":     "<!doctype html><title>sub</title>",
		"empty/.placeholder": "",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWebProxyFiles checks what -webproxy serves: regular files with a
// policy and the right types, a directory's index, and 404 for everything
// else (listings, links out of the tree, dot-dot paths), 405 for writes.
func TestWebProxyFiles(t *testing.T) {
	tb := newTestBroker(t, broker.Config{WebProxyDir: webProxyDir(t)})
	for _, c := range []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/webproxy/badge.html", 200, "text/html; charset=utf-8", "<!doctype html><title>badge</title>"},
		{"HEAD", "/webproxy/badge.html", 200, "text/html; charset=utf-8", ""},
		{"GET", "/webproxy/js/proxy.js", 200, "text/javascript; charset=utf-8", "export const x = 1;\n"},
		{"GET", "/webproxy/sub/", 200, "text/html; charset=utf-8", "<!doctype html><title>sub</title>"},
		{"GET", "/webproxy/empty/", 404, "", ""},
		{"GET", "/webproxy/js/", 404, "", ""},
		{"GET", "/webproxy/", 404, "", ""},
		{"GET", "/webproxy/escape.txt", 404, "", ""},
		{"GET", "/webproxy/../broker_test.go", 404, "", ""},
		{"GET", "/webproxy/%2e%2e/broker_test.go", 404, "", ""},
		{"GET", "/webproxy/missing.js", 404, "", ""},
		{"POST", "/webproxy/badge.html", 405, "", ""},
	} {
		r := tb.do(t, c.method, c.path, nil, nil)
		if r.status != c.status {
			t.Errorf("%s %s: status %d, want %d", c.method, c.path, r.status, c.status)
			continue
		}
		if c.status != 200 {
			if strings.Contains(string(r.body), "secret") {
				t.Errorf("%s %s: the reply leaks a file outside the directory", c.method, c.path)
			}
			continue
		}
		if got := r.header.Get("Content-Type"); got != c.ctype {
			t.Errorf("%s %s: Content-Type %q, want %q", c.method, c.path, got, c.ctype)
		}
		if string(r.body) != c.body {
			t.Errorf("%s %s: body %q, want %q", c.method, c.path, r.body, c.body)
		}
		for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "Cache-Control"} {
			if r.header.Get(h) == "" {
				t.Errorf("%s %s: no %s", c.method, c.path, h)
			}
		}
		if r.header.Get("X-Frame-Options") != "" || strings.Contains(r.header.Get("Content-Security-Policy"), "frame-ancestors") {
			t.Errorf("%s %s: the badge must be embeddable", c.method, c.path)
		}
	}
	// Without the option there is no such path.
	plain := newTestBroker(t, broker.Config{})
	if r := plain.do(t, "GET", "/webproxy/badge.html", nil, nil); r.status != http.StatusNotFound {
		t.Errorf("without -webproxy: status %d, want 404", r.status)
	}
}

func TestWebProxyDirMustExist(t *testing.T) {
	if _, err := broker.New(broker.Config{WebProxyDir: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("New accepted a missing web proxy directory")
	}
}
