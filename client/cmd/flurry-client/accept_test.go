package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// greet sends a SOCKS5 greeting offering "no authentication" and reads the
// method selection.
func greet(conn net.Conn) error {
	if _, err := conn.Write([]byte{5, 1, 0}); err != nil {
		return err
	}
	var sel [2]byte
	if _, err := io.ReadFull(conn, sel[:]); err != nil {
		return err
	}
	if sel != [2]byte{5, 0} {
		return fmt.Errorf("method selection %x", sel)
	}
	return nil
}

// TestAcceptSurvivesEMFILE runs the binary with a file-descriptor limit
// that local connections exhaust: Accept fails with EMFILE, and once the
// connections are gone the client accepts again (Snowflake's accept loop
// ends for good there).
func TestAcceptSurvivesEMFILE(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)

	// dash and bash set both the soft and the hard limit: the Go runtime
	// raises only the soft one to the hard one.
	cmd := exec.Command("sh", "-c", `ulimit -n 24 && exec "$@"`, "sh",
		bin, "-url", "http://127.0.0.1:1/", "-loopback-only", "-socks", addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	ready := make(chan struct{})
	emfile := make(chan struct{})
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		var readyOnce, emfileOnce sync.Once
		for sc.Scan() {
			l := sc.Text()
			logMu.Lock()
			log.WriteString(l + "\n")
			logMu.Unlock()
			if strings.Contains(l, "SOCKS5 proxy on") {
				readyOnce.Do(func() { close(ready) })
			}
			if strings.Contains(l, "too many open files") {
				emfileOnce.Do(func() { close(emfile) })
			}
		}
	}()
	defer func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("client log:\n%s", log.String())
			logMu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-time.After(hangGuard):
		t.Fatal("SOCKS listener did not start")
	}

	// Silent connections hold the client's descriptors until Accept fails.
	var flood []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	select {
	case <-emfile:
	case <-time.After(hangGuard):
		t.Fatal("Accept never failed with EMFILE")
	}
	for _, c := range flood {
		c.Close()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	if err := greet(c); err != nil {
		t.Fatalf("no SOCKS service after the descriptors came back: %v", err)
	}
}
