package relay

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

func TestParseBackend(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Backend
		err  bool
	}{
		{in: "tcp:127.0.0.1:9001", want: Backend{Name: "127.0.0.1:9001", Addr: "127.0.0.1:9001"}},
		{in: "tcp:[::1]:9001,name=b1", want: Backend{Name: "b1", Addr: "[::1]:9001"}},
		{in: "extorport:127.0.0.1:9101,cookie=/var/lib/tor-instances/b1/extended_orport_auth_cookie,name=b1",
			want: Backend{Name: "b1", Addr: "127.0.0.1:9101", ExtORCookie: "/var/lib/tor-instances/b1/extended_orport_auth_cookie"}},
		{in: "127.0.0.1:9001", err: true},                   // no kind
		{in: "udp:127.0.0.1:9001", err: true},               // unknown kind
		{in: "tcp:127.0.0.1", err: true},                    // no port
		{in: "extorport:127.0.0.1:9101", err: true},         // no cookie
		{in: "tcp:127.0.0.1:9001,cookie=/c", err: true},     // cookie on plain TCP
		{in: "tcp:127.0.0.1:9001,name=a b", err: true},      // bad name
		{in: "tcp:127.0.0.1:9001,name=a,name=b", err: true}, // twice
		{in: "tcp:127.0.0.1:9001,colour=blue", err: true},   // unknown option
		{in: "tcp:127.0.0.1:9001,name=" + strings.Repeat("x", 65), err: true},
	} {
		got, err := ParseBackend(tc.in)
		if tc.err {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("ParseBackend(%q) = %+v, %v; want ErrInvalidConfig", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBackend(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if again, err := ParseBackend(got.String()); err != nil || again != got {
			t.Errorf("ParseBackend(%q.String()) = %+v, %v", tc.in, again, err)
		}
	}
	for _, cfg := range []Config{
		{Backends: []Backend{{Addr: "127.0.0.1:1"}}, ForwardAddr: "127.0.0.1:2"},
		{Backends: []Backend{{Addr: "127.0.0.1:1"}, {Addr: "127.0.0.1:1"}}},
		{Backends: []Backend{{Addr: "nowhere"}}},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg.Backends, err)
		}
	}
}

// namedServer is a TCP server that answers each connection with its name
// and then echoes; kill closes it and every connection it has.
type namedServer struct {
	name, addr string
	mu         sync.Mutex
	ln         net.Listener
	conns      map[net.Conn]bool
	wg         sync.WaitGroup
}

func startNamedServer(tb testing.TB, name, addr string) *namedServer {
	tb.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	s := &namedServer{name: name, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = true
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				if _, err := io.WriteString(c, s.name); err == nil {
					io.Copy(c, c)
				}
			}()
		}
	}()
	tb.Cleanup(s.kill)
	return s
}

func (s *namedServer) kill() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// openNamed opens a stream and returns it with the name of the backend
// that answered.
func openNamed(t *testing.T, client *testClient) (*smux.Stream, string) {
	t.Helper()
	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	stream.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := stream.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	name := make([]byte, 1)
	if _, err := io.ReadFull(stream, name); err != nil {
		t.Fatalf("no answer on the stream: %v", err)
	}
	return stream, string(name)
}

func backendStats(r *Relay, name string) BackendStats {
	for _, b := range r.Stats().Backends {
		if b.Name == name {
			return b
		}
	}
	return BackendStats{}
}

// TestBackends: streams of one session are spread over two backends by
// least connections; a backend that dies is taken out (the stream that
// finds it dead goes to the other one), reported down, and back in
// rotation once its health check succeeds again.
func TestBackends(t *testing.T) {
	a := startNamedServer(t, "a", "127.0.0.1:0")
	b := startNamedServer(t, "b", "127.0.0.1:0")
	r, wsURL := startRelay(t, Config{
		Backends:             []Backend{{Name: "a", Addr: a.addr}, {Name: "b", Addr: b.addr}},
		BackendCheckInterval: time.Hour, // only failures trigger probes here
	})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)

	count := map[string]int{}
	var held []*smux.Stream
	for range 6 {
		s, name := openNamed(t, client)
		held = append(held, s)
		count[name]++
	}
	if count["a"] != 3 || count["b"] != 3 {
		t.Errorf("6 concurrent streams went %v, want 3 to each backend", count)
	}
	for _, s := range held {
		s.Close()
	}
	waitIdle(t, r)

	// With the streams held open, least connections sends the second one
	// to a, which is dead by then: it is taken out and the stream goes to b.
	a.kill()
	held = held[:0]
	for i := range 4 {
		s, name := openNamed(t, client)
		held = append(held, s)
		if name != "b" {
			t.Errorf("stream %d after a died went to %q", i, name)
		}
	}
	for _, s := range held {
		s.Close()
	}
	st := backendStats(r, "a")
	if st.Up || st.Failures == 0 {
		t.Errorf("backend a after it died: %+v, want down with failures", st)
	}
	if got := r.Stats().DialFailures; got != 0 {
		t.Errorf("DialFailures = %d, want 0 (the other backend took every stream)", got)
	}

	// a comes back on the same address: its back-off probe (1 s, 2 s, ...)
	// puts it back.
	startNamedServer(t, "a", a.addr)
	deadline := time.Now().Add(60 * time.Second)
	for !backendStats(r, "a").Up {
		if time.Now().After(deadline) {
			t.Fatalf("backend a not back up: %+v", backendStats(r, "a"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitIdle(t, r)
	count = map[string]int{}
	held = held[:0]
	for range 4 {
		s, name := openNamed(t, client)
		held = append(held, s)
		count[name]++
	}
	if count["a"] != 2 || count["b"] != 2 {
		t.Errorf("4 streams after a came back went %v, want 2 each", count)
	}
	for _, s := range held {
		s.Close()
	}
}

// waitIdle waits until no backend has an open stream.
func waitIdle(t *testing.T, r *Relay) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		busy := false
		for _, b := range r.Stats().Backends {
			busy = busy || b.ActiveStreams != 0
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("streams still open: %+v", r.Stats().Backends)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestBackendsAllDown: with every backend down the stream fails and is
// counted once.
func TestBackendsAllDown(t *testing.T) {
	r, wsURL := startRelay(t, Config{Backends: []Backend{{Addr: closedPort(t)}, {Addr: closedPort(t)}}})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	stream.SetDeadline(time.Now().Add(30 * time.Second))
	stream.Write([]byte("hello"))
	io.ReadAll(stream)
	deadline := time.Now().Add(30 * time.Second)
	for r.Stats().DialFailures != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("DialFailures = %d, want 1", r.Stats().DialFailures)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, b := range r.Stats().Backends {
		if b.Up || b.Failures == 0 || b.Streams != 0 {
			t.Errorf("%+v: want down, failed, no stream", b)
		}
	}
}
