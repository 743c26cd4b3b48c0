package proxynet_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/client/internal/proxynet"
	"github.com/flurrypt/flurry/client/internal/socks5udp"
	"github.com/flurrypt/flurry/internal/testkit/socks5test"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hangGuard = 10 * time.Second

// setup returns a Net over a test SOCKS5 proxy.
func setup(tb testing.TB, cfg proxynet.Config) (*proxynet.Net, *socks5test.Server) {
	tb.Helper()
	proxy, err := socks5test.New(socks5test.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(proxy.Close)
	cfg.SOCKS, err = socks5udp.New(socks5udp.Config{ProxyAddr: proxy.Addr()})
	if err != nil {
		tb.Fatal(err)
	}
	n, err := proxynet.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return n, proxy
}

// startSTUN runs a STUN server on 127.0.0.1 that answers Binding Requests
// with the source address.
func startSTUN(tb testing.TB) *net.UDPAddr {
	tb.Helper()
	url := stuntest.StartOn(tb, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
	addr, err := net.ResolveUDPAddr("udp4", strings.TrimPrefix(url, "stun:"))
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

func TestInterfaces(t *testing.T) {
	n, _ := setup(t, proxynet.Config{})
	ifaces, err := n.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) != 1 || ifaces[0].Name != proxynet.InterfaceName {
		t.Fatalf("interfaces %+v, want the one virtual interface", ifaces)
	}
	addrs, err := ifaces[0].Addrs()
	if err != nil || len(addrs) != 1 || addrs[0].(*net.IPNet).IP.String() != "127.0.0.1" {
		t.Errorf("addresses %v (%v), want the proxy's 127.0.0.1", addrs, err)
	}
	if ifaces[0].Flags&net.FlagLoopback == 0 || ifaces[0].Flags&net.FlagUp == 0 {
		t.Errorf("flags %v, want up and loopback", ifaces[0].Flags)
	}
	if byName, err := n.InterfaceByName(proxynet.InterfaceName); err != nil || byName.Index != ifaces[0].Index {
		t.Errorf("InterfaceByName = %v, %v", byName, err)
	}
	if _, err := n.InterfaceByName("lo"); !errors.Is(err, proxynet.ErrNoInterface) {
		t.Errorf("InterfaceByName(lo) = %v, want ErrNoInterface", err)
	}
}

// TestListenUDP checks that pion's sockets are associations: the local
// address is the relay's, and a STUN exchange goes through the proxy.
func TestListenUDP(t *testing.T) {
	n, proxy := setup(t, proxynet.Config{})
	server := startSTUN(t)
	conn, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	relay := conn.LocalAddr().(*net.UDPAddr)
	if !relay.IP.IsLoopback() || relay.Port == 0 {
		t.Errorf("LocalAddr %v, want the relay address", relay)
	}
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	if _, err := conn.WriteTo(req.Raw, server); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
	buf := make([]byte, 1500)
	nr, from, err := conn.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	resp := &stun.Message{Raw: buf[:nr]}
	var mapped stun.XORMappedAddress
	if err := resp.Decode(); err != nil || mapped.GetFrom(resp) != nil {
		t.Fatalf("bad STUN reply: %v", err)
	}
	if from.String() != server.String() {
		t.Errorf("reply from %v, want %v", from, server)
	}
	// The STUN server saw the proxy's relay socket, which here is also
	// the relay address.
	if mapped.Port != relay.Port {
		t.Errorf("mapped address %v, want the relay's port %d", mapped, relay.Port)
	}
	if st := proxy.Stats(); st.Associations != 1 || st.DatagramsOut != 1 || st.DatagramsIn != 1 {
		t.Errorf("proxy stats %+v", st)
	}
}

func TestResolveUDPAddr(t *testing.T) {
	n, proxy := setup(t, proxynet.Config{ResolveTimeout: 2 * time.Second})
	server := startSTUN(t)

	got, err := n.ResolveUDPAddr("udp4", "192.0.2.7:3478")
	if err != nil || got.String() != "192.0.2.7:3478" {
		t.Errorf("IP literal: %v, %v", got, err)
	}
	if proxy.Stats().Associations != 0 {
		t.Error("an IP literal made an association")
	}

	name := net.JoinHostPort("localhost", itoa(server.Port))
	got, err = n.ResolveUDPAddr("udp4", name)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != server.String() {
		t.Errorf("resolved %s to %v, want %v", name, got, server)
	}
	if st := proxy.Stats(); st.Associations != 1 || st.DatagramsOut < 1 {
		t.Errorf("proxy stats %+v: the name was not resolved through the proxy", st)
	}
	// The result is cached.
	if again, err := n.ResolveUDPAddr("udp4", name); err != nil || again.String() != got.String() {
		t.Errorf("second resolution: %v, %v", again, err)
	}
	if st := proxy.Stats(); st.Associations != 1 {
		t.Errorf("second resolution made an association (%+v)", st)
	}
	if _, err := n.ResolveUDPAddr("udp6", name); !errors.Is(err, proxynet.ErrResolve) {
		t.Errorf("udp6 for an IPv4 server: %v, want ErrResolve", err)
	}
}

// TestResolveNoReply: a name whose server does not answer fails with
// ErrResolve once the timeout ends.
func TestResolveNoReply(t *testing.T) {
	n, _ := setup(t, proxynet.Config{ResolveTimeout: 300 * time.Millisecond})
	silent, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, err = n.ResolveUDPAddr("udp4", net.JoinHostPort("localhost", itoa(silent.LocalAddr().(*net.UDPAddr).Port)))
	if !errors.Is(err, proxynet.ErrResolve) {
		t.Errorf("err = %v, want ErrResolve", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := n.ResolveSTUN(ctx, "localhost:1"); !errors.Is(err, proxynet.ErrResolve) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ResolveSTUN = %v, want ErrResolve and DeadlineExceeded", err)
	}
}

func TestRefusesEverythingElse(t *testing.T) {
	n, _ := setup(t, proxynet.Config{})
	if _, err := n.Dial("udp", "127.0.0.1:9"); !errors.Is(err, proxynet.ErrNotSupported) {
		t.Errorf("Dial = %v", err)
	}
	if _, err := n.DialUDP("udp", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); !errors.Is(err, proxynet.ErrNotSupported) {
		t.Errorf("DialUDP = %v", err)
	}
	if _, err := n.DialTCP("tcp", nil, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); !errors.Is(err, proxynet.ErrNotSupported) {
		t.Errorf("DialTCP = %v", err)
	}
	if _, err := n.ListenTCP("tcp", nil); !errors.Is(err, proxynet.ErrNotSupported) {
		t.Errorf("ListenTCP = %v", err)
	}
	if _, err := n.CreateDialer(&net.Dialer{}).Dial("tcp", "127.0.0.1:9"); !errors.Is(err, proxynet.ErrNotSupported) {
		t.Errorf("CreateDialer().Dial = %v", err)
	}
	if _, err := n.ListenPacket("tcp", ""); !errors.Is(err, proxynet.ErrNetwork) {
		t.Errorf("ListenPacket(tcp) = %v", err)
	}
	if _, err := n.ResolveTCPAddr("tcp", "example.com:80"); !errors.Is(err, proxynet.ErrNotSupported) {
		t.Errorf("ResolveTCPAddr(name) = %v", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
