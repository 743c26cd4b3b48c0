package servercmd

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/certtest"
)

func parse(t *testing.T, args ...string) (*TLSFlags, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f TLSFlags
	f.Register(fs, "cache")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f, f.Check()
}

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		args []string
		err  string // "" = valid
	}{
		{[]string{"-disable-tls"}, ""},
		{[]string{"-cert", "c", "-key", "k"}, ""},
		{[]string{"-acme-hostnames", "a.example, b.example"}, ""},
		{nil, "one of -acme-hostnames, -cert and -key, or -disable-tls is required"},
		{[]string{"-cert", "c"}, "-cert and -key must be given together"},
		{[]string{"-key", "k"}, "-cert and -key must be given together"},
		{[]string{"-disable-tls", "-cert", "c", "-key", "k"}, "-disable-tls cannot be combined"},
		{[]string{"-disable-tls", "-acme-hostnames", "a.example"}, "-disable-tls cannot be combined"},
		{[]string{"-acme-hostnames", "a", "-key", "k"}, "-acme-hostnames cannot be combined"},
		{[]string{"-acme-hostnames", ","}, "names no host"},
	} {
		_, err := parse(t, tt.args...)
		if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: err = %v, want %q", tt.args, err, tt.err)
		}
	}
}

// TestSetup: each choice gives the TLS configuration it should, and the
// HTTP-01 listener answers on -acme-http-addr until Close.
func TestSetup(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	f, _ := parse(t, "-disable-tls")
	if tl, err := f.Setup("127.0.0.1:0", log); err != nil || tl.Config != nil || tl.Mode != "off" {
		t.Errorf("-disable-tls: %+v, %v", tl, err)
	}

	certFile, keyFile := certtest.New(t, "a.example").Files(t)
	f, _ = parse(t, "-cert", certFile, "-key", keyFile)
	tl, err := f.Setup("127.0.0.1:0", log, "h2", "http/1.1")
	if err != nil || tl.Config == nil || len(tl.Config.Certificates) != 1 || !slices.Equal(tl.Config.NextProtos, []string{"h2", "http/1.1"}) {
		t.Errorf("-cert/-key: %+v, %v", tl, err)
	}
	f, _ = parse(t, "-cert", certFile, "-key", filepath.Join(t.TempDir(), "missing"))
	if _, err := f.Setup("127.0.0.1:0", log); err == nil || !strings.Contains(err.Error(), "-cert/-key") {
		t.Errorf("missing key: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	challenge := ln.Addr().String()
	ln.Close()
	cache := filepath.Join(t.TempDir(), "acme")
	f, _ = parse(t, "-acme-hostnames", "a.example", "-acme-cert-cache", cache, "-acme-http-addr", challenge)
	tl, err = f.Setup("127.0.0.1:0", log, "http/1.1")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	if tl.Mode != "acme" || tl.Config.GetCertificate == nil || !slices.Equal(tl.Config.NextProtos, []string{"http/1.1", "acme-tls/1"}) || !slices.Equal(tl.Hostnames, []string{"a.example"}) {
		t.Errorf("ACME: %+v", tl)
	}
	if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v, %v", fi, err)
	}
	// Anything but a challenge is redirected to https, whatever the port.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get("http://" + challenge + "/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), "https://127.0.0.1/") {
		t.Errorf("plain request: %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	if err := tl.Close(); err != nil {
		t.Error(err)
	}
	if _, err := net.Dial("tcp", challenge); err == nil {
		t.Error("the HTTP-01 listener still listens after Close")
	}

	f, _ = parse(t, "-acme-hostnames", "a.example", "-acme-cert-cache", "", "-acme-http-addr", "off")
	if tl, err := f.Setup("127.0.0.1:0", log); err != nil || tl.challenge != nil {
		t.Errorf("-acme-http-addr off: %+v, %v", tl, err)
	}
}

func TestNewLogger(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, LogOptions{})
	log.Info("peer 192.0.2.1:443 said hi", "addr", "[2001:db8::1]:80")
	log.Debug("not at info")
	if s := buf.String(); strings.Contains(s, "192.0.2.1") || strings.Contains(s, "2001:db8") || strings.Contains(s, "not at info") || !strings.Contains(s, "Z level=INFO") {
		t.Errorf("scrubbed UTC info log: %s", s)
	}
	buf.Reset()
	NewLogger(&buf, LogOptions{Unsafe: true, Level: slog.LevelDebug}).Debug("peer 192.0.2.1")
	if !strings.Contains(buf.String(), "192.0.2.1") {
		t.Errorf("unsafe debug log: %s", buf.String())
	}
}

// TestOpenLog: -log appends to a file of mode 0600, scrubbed; without it
// the fallback writer gets the log, or nothing does.
func TestOpenLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	for range 2 {
		log, closeLog, err := OpenLog(path, nil, LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		log.Info("line", "peer", "192.0.2.1")
		closeLog()
	}
	b, err := os.ReadFile(path)
	fi, _ := os.Stat(path)
	if err != nil || strings.Count(string(b), "msg=line") != 2 || strings.Contains(string(b), "192.0.2.1") || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file %q, %v, mode %v", b, err, fi.Mode())
	}

	var buf bytes.Buffer
	log, closeLog, err := OpenLog("", &buf, LogOptions{Unsafe: true})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("to the fallback", "peer", "192.0.2.1")
	closeLog()
	if !strings.Contains(buf.String(), "192.0.2.1") {
		t.Errorf("fallback log: %q", buf.String())
	}
	log, closeLog, err = OpenLog("", nil, LogOptions{})
	if err != nil || log.Enabled(context.Background(), slog.LevelError) {
		t.Errorf("no fallback: a logger that logs (%v)", err)
	}
	closeLog()

	if _, _, err := OpenLog(filepath.Join(t.TempDir(), "missing", "log"), nil, LogOptions{}); err == nil || !strings.HasPrefix(err.Error(), "open log: ") {
		t.Errorf("log in a missing directory: %v", err)
	}
}

func TestOnSignal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan struct{}, 16)
	done := make(chan struct{})
	// Our own registration keeps SIGHUP's default action (exit) away
	// until OnSignal has registered too.
	keep := make(chan os.Signal, 16)
	signal.Notify(keep, syscall.SIGHUP)
	defer signal.Stop(keep)
	go func() {
		OnSignal(ctx, syscall.SIGHUP, func() { called <- struct{}{} })
		close(done)
	}()
	deadline := time.After(20 * time.Second) // only against a hang
	for {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-called:
			cancel()
			<-done
			return
		case <-deadline:
			t.Fatal("SIGHUP did not call fn")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
