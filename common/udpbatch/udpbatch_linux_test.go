package udpbatch

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func listen(t *testing.T) *net.UDPConn {
	t.Helper()
	return listenOn(t, "udp4", net.IPv4(127, 0, 0, 1))
}

func listenOn(t *testing.T, network string, ip net.IP) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
	if err != nil {
		t.Fatal(err)
	}
	// Room for everything a test sends, so that loopback drops nothing.
	_ = c.SetReadBuffer(8 << 20)
	t.Cleanup(func() { c.Close() })
	return c
}

// testBuffers are the tests' sockets' pools, shared as a process's are.
var testBuffers = NewBuffers()

func wrap(t *testing.T, c *net.UDPConn) *Conn {
	t.Helper()
	w := Wrap(c, testBuffers)
	b, ok := w.(*Conn)
	if !ok || b.w == nil || !b.gro {
		t.Fatalf("Wrap: %T, want a Conn with GSO and GRO (this kernel has both)", w)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// datagrams returns n datagrams in runs of equal sizes, some ended by a
// shorter one and some by a longer one, each with distinct contents.
func datagrams(n int) [][]byte {
	sizes := []int{1200, 1200, 1200, 1200, 700, 1200, 1200, 40, 40, 1300, 1200, 1}
	out := make([][]byte, n)
	for i := range out {
		d := bytes.Repeat([]byte{byte(i)}, sizes[i%len(sizes)])
		copy(d, fmt.Sprintf("%06d", i))
		out[i] = d
	}
	return out
}

func addrPort(c net.PacketConn) netip.AddrPort {
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

// TestDatagramsIntactAndInOrder sends datagrams of mixed sizes from a
// wrapped socket to a wrapped socket and reads each back whole, in order,
// over IPv4 and IPv6.
func TestDatagramsIntactAndInOrder(t *testing.T) {
	t.Run("ipv4", func(t *testing.T) { testIntactAndInOrder(t, "udp4", net.IPv4(127, 0, 0, 1)) })
	t.Run("ipv6", func(t *testing.T) { testIntactAndInOrder(t, "udp6", net.IPv6loopback) })
}

func testIntactAndInOrder(t *testing.T, network string, ip net.IP) {
	a, b := wrap(t, listenOn(t, network, ip)), wrap(t, listenOn(t, network, ip))
	want := datagrams(3000)
	go func() {
		for _, d := range want {
			if _, err := a.WriteToAddrPort(d, addrPort(b)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	buf := make([]byte, 2048)
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i, d := range want {
		n, from, err := b.ReadFromAddrPort(buf)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if from != addrPort(a) {
			t.Fatalf("datagram %d from %v, want %v", i, from, addrPort(a))
		}
		if !bytes.Equal(buf[:n], d) {
			t.Fatalf("datagram %d: %d bytes starting %q, want %d starting %q", i, n, buf[:min(n, 6)], len(d), d[:min(len(d), 6)])
		}
	}
}

// TestSendsCoalesce checks that queued datagrams leave as GSO sends: a
// plain socket with GRO on receives them coalesced, which loopback does
// only for what was sent as one.
func TestSendsCoalesce(t *testing.T) {
	a, r := wrap(t, listen(t)), listen(t)
	raw, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	_ = raw.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) })
	if serr != nil {
		t.Fatal(serr)
	}
	d := bytes.Repeat([]byte{7}, 1200)
	// Hold the sender so that the datagrams queue up behind it.
	a.w.mu.Lock()
	for range 10 {
		a.w.pending.add(d, addrPort(r))
	}
	a.w.mu.Unlock()
	a.w.wake <- struct{}{}

	buf, oob := make([]byte, 1<<16), make([]byte, 64)
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := r.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		t.Fatal(err)
	}
	if n != 10*len(d) || groSegment(oob[:oobn]) != len(d) {
		t.Fatalf("read %d bytes in segments of %d, want %d in segments of %d", n, groSegment(oob[:oobn]), 10*len(d), len(d))
	}
}

// TestRuns checks which datagrams go out as one GSO send.
func TestRuns(t *testing.T) {
	x, y := netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2")
	msg := func(n int, to netip.AddrPort) datagram { return datagram{n: n, to: to} }
	many := make([]datagram, 70)
	for i := range many {
		many[i] = msg(100, x)
	}
	big := make([]datagram, 60)
	for i := range big {
		big[i] = msg(1400, x)
	}
	for _, tc := range []struct {
		name string
		msgs []datagram
		gso  bool
		want []int // the end of each run
	}{
		{"equal", []datagram{msg(5, x), msg(5, x), msg(5, x)}, true, []int{3}},
		{"shorter ends", []datagram{msg(5, x), msg(5, x), msg(3, x), msg(5, x)}, true, []int{3, 4}},
		{"longer starts anew", []datagram{msg(5, x), msg(6, x), msg(6, x)}, true, []int{1, 3}},
		{"another address", []datagram{msg(5, x), msg(5, y), msg(5, y)}, true, []int{1, 3}},
		{"at most 64", many, true, []int{64, 70}},
		{"at most 65000 bytes", big, true, []int{46, 60}},
		{"without GSO", []datagram{msg(5, x), msg(5, x)}, false, []int{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writer{gso: tc.gso}
			var got []int
			for i := 0; i < len(tc.msgs); {
				i = w.run(tc.msgs, i)
				got = append(got, i)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("runs end at %v, want %v", got, tc.want)
			}
		})
	}
}

// TestConcurrentWriters sends from several goroutines at once; every
// datagram arrives once and whole.
func TestConcurrentWriters(t *testing.T) {
	a, b := wrap(t, listen(t)), wrap(t, listen(t))
	const writers, each = 4, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				d := bytes.Repeat([]byte{byte(w)}, 1000)
				copy(d, fmt.Sprintf("%d:%04d", w, i))
				if _, err := a.WriteTo(d, b.LocalAddr()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[string]bool{}
	buf := make([]byte, 2048)
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
	for range writers * each {
		n, _, err := b.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d datagrams: %v", len(seen), err)
		}
		if n != 1000 || seen[string(buf[:6])] {
			t.Fatalf("datagram %q of %d bytes (seen before: %v)", buf[:6], n, seen[string(buf[:6])])
		}
		seen[string(buf[:6])] = true
	}
	wg.Wait()
}

// TestCloseSendsQueued checks that Close sends what is queued before it
// closes, and that writes fail after it.
func TestCloseSendsQueued(t *testing.T) {
	a, r := wrap(t, listen(t)), listen(t)
	d := bytes.Repeat([]byte{1}, 500)
	a.w.mu.Lock() // queue behind a held sender, and close at once
	for range 20 {
		a.w.pending.add(d, addrPort(r))
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		a.w.mu.Unlock()
	}()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WriteToAddrPort(d, addrPort(r)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after Close: %v, want net.ErrClosed", err)
	}
	buf := make([]byte, 2048)
	_ = r.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 20 {
		if n, _, err := r.ReadFrom(buf); err != nil || n != len(d) {
			t.Fatalf("datagram %d: %d bytes, %v", i, n, err)
		}
	}
}

// TestWriteMsgUDPAfterQueued checks that a datagram with control messages
// leaves after the queued ones.
func TestWriteMsgUDPAfterQueued(t *testing.T) {
	a, b := wrap(t, listen(t)), wrap(t, listen(t))
	for i := range 50 {
		if _, err := a.WriteToAddrPort([]byte{byte(i)}, addrPort(b)); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := a.WriteMsgUDP([]byte{50}, nil, b.LocalAddr().(*net.UDPAddr)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 51 {
		n, _, _, _, err := b.ReadMsgUDP(buf, nil)
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("datagram %d: %d bytes %v, %v", i, n, buf[:n], err)
		}
	}
}

// TestTruncatesLikeUDP checks that a read into a short buffer loses the
// datagram's tail and not the next datagram.
func TestTruncatesLikeUDP(t *testing.T) {
	a, b := wrap(t, listen(t)), wrap(t, listen(t))
	for _, d := range [][]byte{bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 100)} {
		if _, err := a.WriteToAddrPort(d, addrPort(b)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 10)
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := range 2 {
		n, _, err := b.ReadFromAddrPort(buf)
		if err != nil || n != 10 || buf[0] != byte(i+1) {
			t.Fatalf("read %d: %d bytes %v, %v", i, n, buf[:n], err)
		}
	}
}

// TestGSOFallback checks that a GSO send the kernel refuses turns GSO off
// for the socket and that datagrams then go one by one, intact.
func TestGSOFallback(t *testing.T) {
	a, b := wrap(t, listen(t)), wrap(t, listen(t))
	// More segments than any kernel takes in one send (64, or 128 in
	// recent kernels): EINVAL. The sender has sent nothing yet, so the test may
	// act as the sender.
	if a.w.sendGSO(make([]byte, 1000*10), 10, addrPort(b)) {
		t.Fatal("the kernel took a GSO send of 1 000 segments")
	}
	if a.w.gso {
		t.Fatal("GSO still on after a refused send")
	}
	want := datagrams(50)
	sendAll(t, a, b, want)
	readAll(t, b, want)
}

// TestQuietConnHoldsNoBuffers checks that once a burst has been sent and
// read, neither end keeps a buffer for it: a peer's sockets are quiet most
// of the time, and a buffer each is memory per user.
func TestQuietConnHoldsNoBuffers(t *testing.T) {
	a, b := wrap(t, listen(t)), wrap(t, listen(t))
	want := datagrams(500)
	sendAll(t, a, b, want)
	a.w.drain()
	a.w.mu.Lock()
	if a.w.pending.bp != nil || a.w.spare.bp != nil {
		t.Error("the writer holds a batch's buffer with nothing queued")
	}
	a.w.mu.Unlock()
	readAll(t, b, want)
	if b.rbuf != nil {
		t.Error("the reader holds a read buffer with every datagram handed out")
	}
}

// TestReadErrorsLikeUDP checks that a wrapped socket's read fails as a
// plain one's does: a timeout at its deadline, net.ErrClosed once closed.
func TestReadErrorsLikeUDP(t *testing.T) {
	b := wrap(t, listen(t))
	_ = b.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, _, err := b.ReadFromAddrPort(make([]byte, 10))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	_ = b.SetReadDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, _, err := b.ReadFromAddrPort(make([]byte, 10))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read on a closed socket: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a blocked read did not return on Close")
	}
}

// TestZoneByName checks that a link-local sender's zone is its
// interface's name, as the net package gives it.
func TestZoneByName(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	var z zoneName
	sa := &unix.SockaddrInet6{Port: 5000, ZoneId: uint32(lo.Index), Addr: [16]byte{0xfe, 0x80, 15: 1}}
	if got, want := z.addrPort(sa), netip.MustParseAddrPort("[fe80::1%lo]:5000"); got != want {
		t.Fatalf("addrPort = %v, want %v", got, want)
	}
	sa.ZoneId = 0
	if got, want := z.addrPort(sa), netip.MustParseAddrPort("[fe80::1]:5000"); got != want {
		t.Fatalf("addrPort without a zone = %v, want %v", got, want)
	}
}

// BenchmarkReadWrite sends and reads back bursts of 1 200-byte datagrams
// between two wrapped sockets, as a download does; allocs/op are per
// datagram.
func BenchmarkReadWrite(b *testing.B) {
	bufs := NewBuffers()
	x, y := Wrap(mustListen(b), bufs).(*Conn), Wrap(mustListen(b), bufs).(*Conn)
	defer x.Close()
	defer y.Close()
	d := make([]byte, 1200)
	buf := make([]byte, 2048)
	to := addrPort(y)
	b.SetBytes(int64(len(d)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 32 {
		burst := min(32, b.N-i)
		for range burst {
			if _, err := x.WriteToAddrPort(d, to); err != nil {
				b.Fatal(err)
			}
		}
		for range burst {
			if _, _, err := y.ReadFromAddrPort(buf); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func mustListen(b *testing.B) *net.UDPConn {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	_ = c.SetReadBuffer(8 << 20)
	return c
}

// sendAll writes want from a to b.
func sendAll(t *testing.T, a, b *Conn, want [][]byte) {
	t.Helper()
	for _, d := range want {
		if _, err := a.WriteToAddrPort(d, addrPort(b)); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads len(want) datagrams from b and checks each against want.
func readAll(t *testing.T, b *Conn, want [][]byte) {
	t.Helper()
	buf := make([]byte, 2048)
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i, d := range want {
		n, _, err := b.ReadFromAddrPort(buf)
		if err != nil || !bytes.Equal(buf[:n], d) {
			t.Fatalf("datagram %d: %d bytes, %v", i, n, err)
		}
	}
}
