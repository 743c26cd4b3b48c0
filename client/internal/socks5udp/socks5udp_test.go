package socks5udp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/client/internal/socks5udp"
	"github.com/flurrypt/flurry/internal/testkit/socks5test"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangGuard bounds every wait; nothing is synchronised on it.
const hangGuard = 10 * time.Second

// startProxy runs a test SOCKS5 server for the test.
func startProxy(tb testing.TB, cfg socks5test.Config) *socks5test.Server {
	tb.Helper()
	s, err := socks5test.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

// startEcho runs a UDP echo server on 127.0.0.1.
func startEcho(tb testing.TB) *net.UDPAddr {
	tb.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 65535)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			_, _ = conn.WriteToUDP(buf[:n], from)
		}
	}()
	tb.Cleanup(func() { conn.Close(); wg.Wait() })
	return conn.LocalAddr().(*net.UDPAddr)
}

func associate(tb testing.TB, cfg socks5udp.Config) *socks5udp.PacketConn {
	tb.Helper()
	c, err := socks5udp.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	pc, err := c.Associate(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pc.Close() })
	if err := pc.SetDeadline(time.Now().Add(hangGuard)); err != nil {
		tb.Fatal(err)
	}
	return pc
}

// roundTrip sends payload to dst and returns the reply and its source.
func roundTrip(tb testing.TB, pc net.PacketConn, dst net.Addr, payload []byte) ([]byte, net.Addr) {
	tb.Helper()
	if n, err := pc.WriteTo(payload, dst); err != nil || n != len(payload) {
		tb.Fatalf("WriteTo = %d, %v", n, err)
	}
	buf := make([]byte, 70000)
	n, from, err := pc.ReadFrom(buf)
	if err != nil {
		tb.Fatalf("ReadFrom: %v", err)
	}
	return buf[:n], from
}

func TestRoundTrip(t *testing.T) {
	echo := startEcho(t)
	tests := []struct {
		name string
		cfg  socks5test.Config
		user string
		pass string
	}{
		{"no auth", socks5test.Config{}, "", ""},
		{"username and password", socks5test.Config{Username: "tor", Password: "secret"}, "tor", "secret"},
		{"username and empty password", socks5test.Config{Username: "tor"}, "tor", ""},
		{"unspecified bind address", socks5test.Config{UnspecifiedBindAddr: true}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := startProxy(t, tt.cfg)
			pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr(), Username: tt.user, Password: tt.pass})
			relay := pc.LocalAddr().(*net.UDPAddr)
			if !relay.IP.IsLoopback() || relay.Port == 0 {
				t.Errorf("LocalAddr = %v, want the relay on 127.0.0.1", relay)
			}
			for _, size := range []int{0, 1, 1200, 4000, 60000} {
				payload := bytes.Repeat([]byte{byte(size)}, size)
				got, from := roundTrip(t, pc, echo, payload)
				if !bytes.Equal(got, payload) {
					t.Fatalf("%d bytes: echo differs (%d bytes back)", size, len(got))
				}
				if from.String() != echo.String() {
					t.Errorf("reply from %v, want %v", from, echo)
				}
			}
			st := proxy.Stats()
			if st.Associations != 1 || st.DatagramsOut != 5 || st.DatagramsIn != 5 {
				t.Errorf("proxy stats %+v, want 1 association and 5 datagrams each way", st)
			}
		})
	}
}

// TestDomainDestination sends to a name that the proxy resolves; the reply
// carries the resolved address.
func TestDomainDestination(t *testing.T) {
	echo := startEcho(t)
	proxy := startProxy(t, socks5test.Config{})
	pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr()})
	got, from := roundTrip(t, pc, socks5udp.DomainAddr{Name: "localhost", Port: uint16(echo.Port)}, []byte("hello"))
	if string(got) != "hello" || from.String() != echo.String() {
		t.Errorf("got %q from %v, want hello from %v", got, from, echo)
	}
}

// TestDroppedDatagrams injects fragments and malformed datagrams from the
// relay: ReadFrom skips them and returns the next good one.
func TestDroppedDatagrams(t *testing.T) {
	echo := startEcho(t)
	proxy := startProxy(t, socks5test.Config{})
	pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr()})
	roundTrip(t, pc, echo, []byte("learn")) // the proxy learns the client's address

	bad := [][]byte{
		{0, 0, 1, 1, 127, 0, 0, 1, 0, 9, 'f', 'r', 'a', 'g'},                    // FRAG 1
		{0, 0, 0x81, 1, 127, 0, 0, 1, 0, 9, 'f', 'r', 'a', 'g'},                 // last fragment
		{0, 7, 0, 1, 127, 0, 0, 1, 0, 9, 'x'},                                   // RSV
		{0, 0, 0, 2, 127, 0, 0, 1, 0, 9, 'x'},                                   // ATYP
		{0, 0, 0, 1, 127, 0},                                                    // truncated
		{0, 0, 0, 3, 9, 'l', 'o', 'c', 'a', 'l', 'h', 'o', 's', 't', 0, 9, 'x'}, // named source
	}
	for _, b := range bad {
		if n := proxy.InjectToClients(b); n != 1 {
			t.Fatalf("injected to %d clients", n)
		}
	}
	good := []byte{0, 0, 0, 1, 127, 0, 0, 1, 0x12, 0x34, 'o', 'k'}
	proxy.InjectToClients(good)
	buf := make([]byte, 1500)
	n, from, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if string(buf[:n]) != "ok" || from.String() != "127.0.0.1:4660" {
		t.Errorf("read %q from %v, want ok from 127.0.0.1:4660", buf[:n], from)
	}
	if d := pc.Dropped(); d != uint64(len(bad)) {
		t.Errorf("Dropped = %d, want %d", d, len(bad))
	}
}

// TestProxyEndsAssociation closes the control connection at the proxy: a
// blocked read and later writes fail with ErrAssociationEnded.
func TestProxyEndsAssociation(t *testing.T) {
	echo := startEcho(t)
	proxy := startProxy(t, socks5test.Config{})
	pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr()})
	roundTrip(t, pc, echo, []byte("x"))

	readErr := make(chan error, 1)
	go func() {
		_, _, err := pc.ReadFrom(make([]byte, 1500))
		readErr <- err
	}()
	proxy.EndAssociations()
	select {
	case <-pc.Done():
	case <-time.After(hangGuard):
		t.Fatal("Done not closed after the proxy closed the control connection")
	}
	err := <-readErr
	if !errors.Is(err, socks5udp.ErrAssociationEnded) || !errors.Is(err, net.ErrClosed) {
		t.Errorf("ReadFrom = %v, want ErrAssociationEnded and net.ErrClosed", err)
	}
	if _, err := pc.WriteTo([]byte("x"), echo); !errors.Is(err, socks5udp.ErrAssociationEnded) {
		t.Errorf("WriteTo = %v, want ErrAssociationEnded", err)
	}
	if err := pc.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

// TestCloseEndsAssociation checks that Close closes the control connection
// (the proxy sees the association end) and is idempotent.
func TestCloseEndsAssociation(t *testing.T) {
	proxy := startProxy(t, socks5test.Config{})
	pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr()})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := proxy.WaitAssociations(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pc.Close()
	pc.Close()
	if err := proxy.WaitAssociations(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pc.ReadFrom(make([]byte, 100)); !errors.Is(err, net.ErrClosed) || errors.Is(err, socks5udp.ErrAssociationEnded) {
		t.Errorf("ReadFrom after Close = %v, want net.ErrClosed only", err)
	}
}

func TestReadDeadline(t *testing.T) {
	proxy := startProxy(t, socks5test.Config{})
	pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr()})
	if err := pc.SetReadDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pc.ReadFrom(make([]byte, 100)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("ReadFrom = %v, want a deadline error", err)
	}
}

func TestWriteErrors(t *testing.T) {
	proxy := startProxy(t, socks5test.Config{})
	pc := associate(t, socks5udp.Config{ProxyAddr: proxy.Addr()})
	dst := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	tests := []struct {
		name    string
		payload []byte
		addr    net.Addr
		want    error
	}{
		{"tcp address", []byte("x"), &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, socks5udp.ErrAddress},
		{"port zero", []byte("x"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, socks5udp.ErrAddress},
		{"no IP", []byte("x"), &net.UDPAddr{Port: 9}, socks5udp.ErrAddress},
		{"bad name", []byte("x"), socks5udp.DomainAddr{Name: "a b", Port: 9}, socks5udp.ErrAddress},
		{"too large", make([]byte, socks5udp.MaxDatagramSize), dst, socks5udp.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := pc.WriteTo(tt.payload, tt.addr); !errors.Is(err, tt.want) {
				t.Errorf("WriteTo = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := pc.Write([]byte("x")); !errors.Is(err, socks5udp.ErrNotConnected) {
		t.Errorf("Write = %v, want ErrNotConnected", err)
	}
}

func TestNewRejects(t *testing.T) {
	long := string(bytes.Repeat([]byte{'u'}, 256))
	for _, cfg := range []socks5udp.Config{
		{},
		{ProxyAddr: "127.0.0.1"},
		{ProxyAddr: ":1080"},
		{ProxyAddr: "127.0.0.1:0"},
		{ProxyAddr: "127.0.0.1:70000"},
		{ProxyAddr: "127.0.0.1:1080", Username: long},
		{ProxyAddr: "127.0.0.1:1080", Username: "u", Password: long},
		{ProxyAddr: "127.0.0.1:1080", Password: "p"},
		{ProxyAddr: "127.0.0.1:1080", HandshakeTimeout: -1},
	} {
		if _, err := socks5udp.New(cfg); !errors.Is(err, socks5udp.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// scriptedProxy accepts one connection, reads what the client sends and
// answers with the given replies, one per read of the client's messages,
// then closes the connection. Without replies it reads and never answers.
func scriptedProxy(tb testing.TB, replies ...[]byte) string {
	tb.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(hangGuard))
		buf := make([]byte, 600)
		for _, r := range replies {
			if _, err := c.Read(buf); err != nil {
				return
			}
			if _, err := c.Write(r); err != nil {
				return
			}
		}
		if len(replies) == 0 {
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	tb.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestHandshakeErrors(t *testing.T) {
	tests := []struct {
		name    string
		user    string
		replies [][]byte
		want    error
	}{
		{"not socks5", "", [][]byte{{4, 0}}, socks5udp.ErrProtocol},
		{"no acceptable method", "", [][]byte{{5, 0xff}}, socks5udp.ErrNoAcceptableAuth},
		{"method not offered", "", [][]byte{{5, 2}}, socks5udp.ErrProtocol},
		{"bad credentials", "u", [][]byte{{5, 2}, {1, 1}}, socks5udp.ErrAuthFailed},
		{"udp not supported", "", [][]byte{{5, 0}, {5, 7, 0, 1, 0, 0, 0, 0, 0, 0}}, socks5udp.ErrRequestFailed},
		{"unknown reply code", "", [][]byte{{5, 0}, {5, 99, 0, 1, 0, 0, 0, 0, 0, 0}}, socks5udp.ErrRequestFailed},
		{"relay port zero", "", [][]byte{{5, 0}, {5, 0, 0, 1, 127, 0, 0, 1, 0, 0}}, socks5udp.ErrProtocol},
		{"unknown atyp in reply", "", [][]byte{{5, 0}, {5, 0, 0, 9, 127, 0, 0, 1, 0, 1}}, socks5udp.ErrProtocol},
		{"truncated reply", "", [][]byte{{5, 0}, {5, 0, 0, 1, 127}}, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := scriptedProxy(t, tt.replies...)
			cfg := socks5udp.Config{ProxyAddr: addr, Username: tt.user, HandshakeTimeout: hangGuard}
			if tt.user != "" {
				cfg.Password = "p"
			}
			c, err := socks5udp.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			pc, err := c.Associate(ctx)
			if pc != nil {
				pc.Close()
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("Associate = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestHandshakeTimeout: a proxy that never answers makes Associate fail
// when its context ends.
func TestHandshakeTimeout(t *testing.T) {
	addr := scriptedProxy(t) // reads, never answers
	c, err := socks5udp.New(socks5udp.Config{ProxyAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Associate(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Associate = %v, want DeadlineExceeded", err)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	echo := startEcho(b)
	proxy := startProxy(b, socks5test.Config{})
	pc := associate(b, socks5udp.Config{ProxyAddr: proxy.Addr()})
	payload := make([]byte, 1200)
	buf := make([]byte, 1500)
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pc.WriteTo(payload, echo); err != nil {
			b.Fatal(err)
		}
		if _, _, err := pc.ReadFrom(buf); err != nil {
			b.Fatal(err)
		}
	}
}
