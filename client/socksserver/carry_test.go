package socksserver_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/client/socksserver"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/messages"
)

// hangGuard bounds every wait; nothing is synchronised on it.
const hangGuard = 20 * time.Second

// socks5Connect performs a SOCKS5 handshake on conn with RFC 1929
// username/password authentication (tor's way of passing bridge-line
// arguments) and a CONNECT to an arbitrary destination.
func socks5Connect(conn net.Conn, user, pass string) error {
	br := bufio.NewReader(conn)
	if _, err := conn.Write([]byte{5, 1, 2}); err != nil {
		return err
	}
	var sel [2]byte
	if _, err := io.ReadFull(br, sel[:]); err != nil {
		return err
	}
	if sel != [2]byte{5, 2} {
		return fmt.Errorf("server chose method %#x", sel[1])
	}
	msg := append([]byte{1, byte(len(user))}, user...)
	msg = append(append(msg, byte(len(pass))), pass...)
	if _, err := conn.Write(msg); err != nil {
		return err
	}
	var st [2]byte
	if _, err := io.ReadFull(br, st[:]); err != nil {
		return err
	}
	if st[1] != 0 {
		return errors.New("authentication failed")
	}
	// CONNECT 192.0.2.1:443: the destination is not used.
	req := []byte{5, 1, 0, 1, 192, 0, 2, 1, 0, 0}
	binary.BigEndian.PutUint16(req[8:], 443)
	if _, err := conn.Write(req); err != nil {
		return err
	}
	var rep [10]byte
	if _, err := io.ReadFull(br, rep[:]); err != nil {
		return fmt.Errorf("read CONNECT reply: %w", err)
	}
	if rep[1] != 0 {
		return fmt.Errorf("CONNECT rejected with code %d", rep[1])
	}
	return nil
}

// serve runs srv on a loopback listener until the test ends.
func serve(t *testing.T, srv *socksserver.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return ln.Addr().String()
}

// TestCarry: a SOCKS connection whose bridge-line arguments name the
// broker is carried through a proxy to the relay's target (an echo
// server), and the clients' events reach OnEvent; a bridge line with a
// bad argument is refused.
func TestCarry(t *testing.T) {
	ch := chaintest.Start(t)
	ch.StartProxy(t, "p1")
	var mu sync.Mutex
	var kinds []client.EventKind
	srv, err := socksserver.New(socksserver.Config{
		Client: client.Config{LoopbackOnly: true},
		OnEvent: func(e client.Event) {
			mu.Lock()
			kinds = append(kinds, e.Kind)
			mu.Unlock()
		},
		Logger: chaintest.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, srv)

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(hangGuard))
	if err := socks5Connect(conn, "url="+ch.BrokerURL+";max=1;fingerprint="+messages.DefaultBridgeFingerprint, "\x00"); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64<<10)
	_, _ = rand.Read(data)
	go func() { _, _ = conn.Write(data) }()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echo through the chain: %v", err)
	}
	mu.Lock()
	sawConnected := false
	for _, k := range kinds {
		sawConnected = sawConnected || k == client.EventProxyConnected
	}
	mu.Unlock()
	if !sawConnected {
		t.Errorf("events %v, want a proxy connected", kinds)
	}

	bad, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_ = bad.SetDeadline(time.Now().Add(hangGuard))
	if err := socks5Connect(bad, "url="+ch.BrokerURL+";max=two", "\x00"); err == nil {
		t.Error("a bridge line with max=two was carried")
	}
}

// TestNew: a bad client configuration is an error, a missing broker is
// left to the bridge lines.
func TestNew(t *testing.T) {
	if _, err := socksserver.New(socksserver.Config{Client: client.Config{BrokerURL: "http://127.0.0.1:1/", Max: -3}}); !errors.Is(err, client.ErrInvalidConfig) {
		t.Errorf("max -3: %v, want ErrInvalidConfig", err)
	}
	srv, err := socksserver.New(socksserver.Config{})
	if err != nil {
		t.Fatalf("no broker: %v", err)
	}
	srv.Close()
	srv.Close() // idempotent
}

// flakyListener fails its first Accepts with err, then returns conns.
type flakyListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
	err   error
}

func (l *flakyListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestAcceptErrors: temporary Accept errors (out of file descriptors) are
// retried and the server accepts again; any other error ends Serve with
// that error.
func TestAcceptErrors(t *testing.T) {
	srv, err := socksserver.New(socksserver.Config{Client: client.Config{BrokerURL: "http://127.0.0.1:1/", LoopbackOnly: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	fl := &flakyListener{Listener: ln, fails: 5, err: emfile}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, fl) }()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	if _, err := c.Write([]byte{5, 1, 0}); err != nil {
		t.Fatal(err)
	}
	var sel [2]byte
	if _, err := io.ReadFull(c, sel[:]); err != nil || sel != [2]byte{5, 0} {
		t.Fatalf("greeting after 5 EMFILEs: %x, %v", sel, err)
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after its context ended = %v", err)
	}

	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ebadf := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EBADF)}
	if err := srv.Serve(context.Background(), &flakyListener{Listener: ln2, fails: 1, err: ebadf}); !errors.Is(err, syscall.EBADF) {
		t.Errorf("Serve after EBADF = %v", err)
	}
	if _, err := net.Dial("tcp", ln2.Addr().String()); err == nil {
		t.Error("the listener is still open after Serve returned")
	}
}
