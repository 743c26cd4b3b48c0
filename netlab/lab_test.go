package netlab

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/netlab/censor"
)

// labName returns a lab name unique to this process and suffix.
func labName(suffix string) string {
	return fmt.Sprintf("ft%d%s", os.Getpid()%100000, suffix)
}

// newLab builds a lab for a test and closes it at the end.
func newLab(t testing.TB, cfg Config) *Lab {
	t.Helper()
	testenv.Root(t, "network lab tests (namespaces, TUN devices)")
	if testing.Short() {
		t.Skip("network lab tests build namespaces; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lab, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return lab
}

// listenTCP listens on addr in a side's namespace.
func listenTCP(t testing.TB, lab *Lab, side Side, addr netip.AddrPort) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := lab.Do(side, func() error {
		var err error
		ln, err = net.Listen("tcp", addr.String())
		return err
	}); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, side, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dialTCP dials addr from a side's namespace.
func dialTCP(lab *Lab, side Side, addr netip.AddrPort, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := lab.Do(side, func() error {
		var err error
		c, err = net.DialTimeout("tcp", addr.String(), timeout)
		return err
	})
	return c, err
}

// download sends size random bytes from a server on the outside to a client
// on the client side and checks that they arrive intact.
func download(t *testing.T, lab *Lab, size int) {
	t.Helper()
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1})
	rng.Read(data)
	want := sha256.Sum256(data)

	addr := netip.AddrPortFrom(lab.OutsideAddr(0), 8080)
	ln := listenTCP(t, lab, Outside, addr)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer c.Close()
		if _, err := c.Write(data); err != nil {
			t.Errorf("server write: %v", err)
		}
	}()
	c, err := dialTCP(lab, Client, addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, c)
	if err != nil {
		t.Fatalf("read after %d bytes: %v", n, err)
	}
	if n != int64(size) || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("got %d bytes, hash %x; want %d bytes, hash %x", n, h.Sum(nil), size, want)
	}
}

func TestLabTCPDownload(t *testing.T) {
	for _, tc := range []struct {
		name     string
		profile  string
		size     int
		wantLoss bool
	}{
		{"lan", "lan", 8 << 20, false},
		{"lossy", "delay=5ms,loss=2%", 2 << 20, true},
		{"jitter", "delay=5ms,jitter=3ms,loss=0.5%,rate=50mbit", 2 << 20, false},
		{"reorder", "delay=2ms,jitter=2ms,reorder", 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseProfile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			lab := newLab(t, Config{Name: labName("d"), Up: p, Down: p, Seed: 1})
			download(t, lab, tc.size)
			st := lab.Stats()
			t.Logf("%s\n%s", tc.profile, st)
			if st.Down.DeliveredBytes < uint64(tc.size) {
				t.Errorf("box delivered %d bytes down, less than the %d downloaded", st.Down.DeliveredBytes, tc.size)
			}
			if st.Up.Packets == 0 || st.Up.Delivered == 0 {
				t.Errorf("no packets went up: %+v", st.Up)
			}
			if lost := st.Up.LossDropped + st.Down.LossDropped; tc.wantLoss && lost == 0 {
				t.Errorf("no packet lost on a lossy path: %s", st)
			}
			if tc.profile == "lan" && st.Up.Dropped()+st.Down.Dropped() != 0 {
				t.Errorf("packets dropped on a perfect path: %s", st)
			}
		})
	}
}

func TestLabUDPBothWays(t *testing.T) {
	lab := newLab(t, Config{Name: labName("u")})
	var srv *net.UDPConn
	srvAddr := netip.AddrPortFrom(lab.OutsideAddr(3), 5353)
	if err := lab.Do(Outside, func() error {
		var err error
		srv, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(srvAddr))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var cli *net.UDPConn
	if err := lab.Do(Client, func() error {
		var err error
		cli, err = net.ListenUDP("udp4", &net.UDPAddr{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	deadline := time.Now().Add(10 * time.Second)
	srv.SetDeadline(deadline)
	cli.SetDeadline(deadline)

	buf := make([]byte, 2048)
	for i := range 50 {
		msg := bytes.Repeat([]byte{byte(i)}, 100+20*i)
		if _, err := cli.WriteToUDPAddrPort(msg, srvAddr); err != nil {
			t.Fatalf("client send: %v", err)
		}
		n, from, err := srv.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("server read %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("server got %d bytes, want %d", n, len(msg))
		}
		if from.Addr() != lab.ClientAddr() {
			t.Fatalf("server saw the client as %s, want %s (no NAT in the box)", from.Addr(), lab.ClientAddr())
		}
		reply := append([]byte("re:"), msg...)
		if _, err := srv.WriteToUDPAddrPort(reply, from); err != nil {
			t.Fatalf("server send: %v", err)
		}
		n, from, err = cli.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("client read %d: %v", i, err)
		}
		if !bytes.Equal(buf[:n], reply) || from != srvAddr {
			t.Fatalf("client got %d bytes from %s, want %d from %s", n, from, len(reply), srvAddr)
		}
	}
	// The box counts a datagram once its write returns, which may be just
	// after the peer has read it: wait for the last count to land.
	st := lab.Stats()
	for end := time.Now().Add(5 * time.Second); (st.Up.Delivered < 50 || st.Down.Delivered < 50) && time.Now().Before(end); st = lab.Stats() {
		time.Sleep(10 * time.Millisecond)
	}
	if st.Up.Delivered < 50 || st.Down.Delivered < 50 {
		t.Errorf("stats do not count 50 datagrams each way: %s", st)
	}
}

func TestLabRateLimit(t *testing.T) {
	const rate = 4_000_000 // bits per second
	p := Profile{Rate: rate}
	if _, err := New(context.Background(), Config{Name: labName("v"), Up: Profile{Loss: 2}, Down: p}); !errors.Is(err, ErrInvalidProfile) {
		t.Fatalf("a lab with 200%% loss: %v, want ErrInvalidProfile", err)
	}
	lab := newLab(t, Config{Name: labName("r"), Up: p, Down: p})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const size = 1 << 20
	res, err := TCPReference(ctx, lab, size)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", res)
	// At 4 Mbit/s, 1 MiB takes about 2.1 s. The link's clock makes it
	// impossible to be much faster; allow four times the rate.
	if got := float64(res.Bytes*8) / res.Elapsed.Seconds(); got > 4*rate {
		t.Errorf("throughput %.0f bit/s through a %d bit/s path", got, rate)
	}
}

// blockSource drops every packet from one address.
type blockSource struct{ addr netip.Addr }

func (b blockSource) Name() string { return "block-source" }

func (b blockSource) Judge(_ time.Time, _ censor.Direction, pkt []byte) censor.Verdict {
	if len(pkt) >= 20 && pkt[0]>>4 == 4 && netip.AddrFrom4([4]byte(pkt[12:16])) == b.addr {
		return censor.Drop
	}
	return censor.Pass
}

func TestLabCensor(t *testing.T) {
	lab := newLab(t, Config{Name: labName("x")})
	blocked := netip.AddrPortFrom(lab.OutsideAddr(1), 443)
	open := netip.AddrPortFrom(lab.OutsideAddr(2), 443)
	for _, ap := range []netip.AddrPort{blocked, open} {
		ln := listenTCP(t, lab, Outside, ap)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	dial := func(ap netip.AddrPort) error {
		c, err := dialTCP(lab, Client, ap, 500*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(blocked); err != nil {
		t.Fatalf("dial %s without a censor: %v", blocked, err)
	}

	lab.SetCensor(blockSource{lab.OutsideAddr(1)})
	if err := dial(blocked); err == nil {
		t.Errorf("dial %s succeeded through a censor that drops its packets", blocked)
	} else if ne, ok := errors.AsType[net.Error](err); !ok || !ne.Timeout() {
		t.Errorf("dial %s: %v, want a timeout", blocked, err)
	}
	if err := dial(open); err != nil {
		t.Errorf("dial %s, which the censor does not block: %v", open, err)
	}
	st := lab.Stats()
	if st.Down.CensorDropped == 0 || st.Up.CensorDropped != 0 {
		t.Errorf("censor drops: up %d, down %d; want only down", st.Up.CensorDropped, st.Down.CensorDropped)
	}

	lab.SetCensor(nil)
	if err := dial(blocked); err != nil {
		t.Errorf("dial %s after removing the censor: %v", blocked, err)
	}
}

func TestLabCommand(t *testing.T) {
	lab := newLab(t, Config{Name: labName("m")})
	out, err := lab.Command(Client, "ip", "-4", "addr", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr in client namespace: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), lab.ClientAddr().String()+"/24") {
		t.Errorf("client namespace lacks %s:\n%s", lab.ClientAddr(), out)
	}
	out, err = lab.Command(Outside, "ip", "-4", "addr", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip addr in outside namespace: %v\n%s", err, out)
	}
	for i := range NumOutsideAddrs {
		if !strings.Contains(string(out), lab.OutsideAddr(i).String()+"/") {
			t.Errorf("outside namespace lacks %s:\n%s", lab.OutsideAddr(i), out)
		}
	}
	if got := lab.OutsideAddr(NumOutsideAddrs); got.IsValid() {
		t.Errorf("OutsideAddr(%d) = %s, want invalid", NumOutsideAddrs, got)
	}
}

// leftovers lists namespaces and root-namespace links whose name starts
// with prefix.
func leftovers(t *testing.T, prefix string) []string {
	t.Helper()
	var found []string
	for _, args := range [][]string{{"netns", "list"}, {"-o", "link", "show"}} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			name := fields[0]
			if args[0] == "-o" && len(fields) > 1 {
				name = strings.TrimSuffix(fields[1], ":")
			}
			if strings.HasPrefix(name, prefix) {
				found = append(found, line)
			}
		}
	}
	return found
}

func TestLabCloseLeavesNothingAndLabsCoexist(t *testing.T) {
	testenv.Root(t, "network lab tests (namespaces, TUN devices)")
	if testing.Short() {
		t.Skip("network lab tests build namespaces; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := []string{labName("a"), labName("b")}
	var labs []*Lab
	defer func() {
		for _, l := range labs {
			l.Close()
		}
	}()
	for _, name := range names {
		l, err := New(ctx, Config{Name: name})
		if err != nil {
			t.Fatalf("New %s: %v", name, err)
		}
		labs = append(labs, l)
	}
	for i, l := range labs {
		res, err := TCPReference(ctx, l, 256<<10)
		if err != nil {
			t.Fatalf("lab %s: %v", names[i], err)
		}
		if res.Stats.Down.Delivered == 0 {
			t.Errorf("lab %s delivered nothing: %s", names[i], res.Stats)
		}
	}
	for i, l := range labs {
		if err := l.Close(); err != nil {
			t.Errorf("Close %s: %v", names[i], err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("second Close %s: %v", names[i], err)
		}
		if err := l.Do(Client, func() error { return nil }); !errors.Is(err, ErrClosed) {
			t.Errorf("Do after Close: %v, want ErrClosed", err)
		}
		if left := leftovers(t, names[i]); len(left) != 0 {
			t.Errorf("after Close, left behind:\n%s", strings.Join(left, "\n"))
		}
	}
}

func TestLabRemovesStaleNamespace(t *testing.T) {
	testenv.Root(t, "network lab tests (namespaces, TUN devices)")
	if testing.Short() {
		t.Skip("network lab tests build namespaces; skipped with -short")
	}
	name := labName("s")
	if out, err := exec.Command("ip", "netns", "add", name+"c").CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	lab := newLab(t, Config{Name: name})
	if _, err := TCPReference(context.Background(), lab, 64<<10); err != nil {
		t.Fatal(err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Name: "Has-Upper"},
		{Name: "muchtoolongname"},
		{Up: Profile{Loss: 2}},
		{Down: Profile{Delay: -1}},
		{MaxQueuedPackets: -1},
	} {
		if _, err := New(context.Background(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// BenchmarkLabTCP measures a TCP download through the box at lan: the
// box's throughput with real TUN devices and the kernel's TCP on both ends.
func BenchmarkLabTCP(b *testing.B) {
	lab := newLab(b, Config{Name: labName("z")})
	const size = 32 << 20
	b.SetBytes(size)
	for b.Loop() {
		if _, err := TCPReference(context.Background(), lab, size); err != nil {
			b.Fatal(err)
		}
	}
	st := lab.Stats()
	b.ReportMetric(float64(st.Down.Delivered+st.Up.Delivered)/b.Elapsed().Seconds(), "pkts/s")
}
