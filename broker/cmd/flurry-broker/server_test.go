package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
)

// serve runs b behind newServer on a loopback listener, as run does, and
// returns its address.
func serve(t *testing.T, b *broker.Broker) string {
	t.Helper()
	srv := newServer(b.Handler(), b.Config(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(b.Listener(ln, nil)) }()
	t.Cleanup(func() {
		b.Shutdown()
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestServerTimeouts checks the main server's limits: a long-poll is not
// cut by the read and write timeouts, a client that never finishes its
// header is disconnected after the header timeout (not held forever), and
// an oversized header is refused.
func TestServerTimeouts(t *testing.T) {
	const hold = 300 * time.Millisecond
	b, err := broker.New(broker.Config{ProxyHold: hold})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, b)

	resp, err := http.Post("http://"+addr+"/proxy", "", strings.NewReader(`{"Sid":"timeouts","Version":"1.3","Type":"standalone","NAT":"unrestricted","AcceptedRelayPattern":""}`))
	if err != nil {
		t.Fatalf("long-poll: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"Status":"no match"`)) {
		t.Errorf("long-poll got %d %q, want no match after the hold", resp.StatusCode, body)
	}

	// Slowloris: half a header, then nothing.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /proxy HTTP/1.1\r\nHost: broker\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// A loose bound far beyond the header timeout, only to catch a hang.
	_ = c.SetReadDeadline(time.Now().Add(6 * readHeaderTimeout))
	_, err = io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("a connection with an unfinished header was still open after %v", time.Since(start))
	}

	// A header over the limit.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	req := "GET /debug HTTP/1.1\r\nHost: broker\r\nX-Pad: " + strings.Repeat("a", 2*maxHeaderBytes) + "\r\n\r\n"
	go func() { _, _ = io.WriteString(c2, req) }()
	r, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatalf("oversized header: %v", err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header got %d, want 431", r.StatusCode)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSIGHUPReload sends the process SIGHUP while reloadOnSIGHUP runs: a
// changed poll-interval file is taken up; a broken one is refused with a
// log line and the old values stay.
func TestSIGHUPReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "poll.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"restricted_poll_interval": 30000}`)
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	b, err := broker.New(broker.Config{PollIntervalPath: path, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	// Our own registration keeps SIGHUP's default action (exit) away
	// until reloadOnSIGHUP has registered too.
	hup := make(chan os.Signal, 16)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		reloadOnSIGHUP(ctx, b, log)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()

	// until sends SIGHUP every 50 ms until cond holds (a generous bound).
	until := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("after SIGHUP: %s never happened", what)
			}
			if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	write(`{"restricted_poll_interval": 5000, "unrestricted_poll_interval": 7000}`)
	until("the new intervals", func() bool {
		r, u := b.PollIntervals()
		return r == 5*time.Second && u == 7*time.Second
	})
	write(`[`)
	until("the refusal", func() bool { return strings.Contains(logs.String(), "SIGHUP: poll intervals not reloaded") })
	if r, u := b.PollIntervals(); r != 5*time.Second || u != 7*time.Second {
		t.Errorf("after a broken file: intervals %v, %v, want the old 5s, 7s", r, u)
	}
}
