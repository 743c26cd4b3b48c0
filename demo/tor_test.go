package demo_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/internal/testkit/socks5test"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/internal/testkit/tortest"
	"github.com/flurrypt/flurry/internal/testkit/wsconn"
)

func skipWithoutTor(t *testing.T) {
	t.Helper()
	skipShort(t)
	if _, err := os.Stat(tortest.DefaultTorPath); err != nil {
		testenv.Missing(t, "tor is not installed (%s: %v); install Debian's tor package to run this test", tortest.DefaultTorPath, err)
	}
	// Build before the test's clock starts: on a busy machine building
	// takes minutes, which the tests' deadlines do not allow for.
	binaries(t)
}

// torChain is a tor bridge running flurry-relay, a Flurry broker and proxy,
// and a tor client running flurry-client, all on loopback.
type torChain struct {
	bridge    *tortest.TorBridge
	client    *tortest.TorClient
	clientTor *childproc.Process
}

// torChainOptions vary startTorChain.
type torChainOptions struct {
	// clientTorrc are extra lines for the client's torrc.
	clientTorrc []string
	// network are the torrc lines of a private Tor network (none: a fake
	// authority, so the client can reach the bridge but not beyond).
	network []string
	// netns, if set, confines the client's tor (and so flurry-client) to
	// this network namespace, which reaches the broker and the proxies at
	// its host address; they and flurry-client then gather WebRTC
	// candidates on every interface, as in production.
	netns *netns
	// external, if set, is a bridge the test runs itself; no bridge tor
	// with flurry-relay as its managed transport is started.
	external *externalBridge
}

// externalBridge is a bridge started by the test: flurry-relay's URL and
// the bridge's fingerprint.
type externalBridge struct {
	relayURL, fingerprint string
}

// startTorChain starts the chain.
func startTorChain(t *testing.T, ctx context.Context, opts torChainOptions) *torChain {
	t.Helper()
	network := opts.network
	bins := binaries(t)
	dir := t.TempDir()
	var bridge *tortest.TorBridge
	relayURL, fp := "", ""
	if opts.external != nil {
		relayURL, fp = opts.external.relayURL, opts.external.fingerprint
	} else {
		var err error
		bridge, err = tortest.WriteTorBridge(dir, bins.Relay, network...)
		if err != nil {
			t.Fatal(err)
		}
		bridgeTor, err := childproc.Start(ctx, childproc.Config{
			Name: "bridge-tor", Path: tortest.DefaultTorPath, LogPath: dir + "/bridge-tor.log",
			Supervisor: "demo",
			Args:       []string{"-f", bridge.Torrc, "--defaults-torrc", os.DevNull},
			Ready:      bridge.Ready(), ReadyTimeout: 60 * time.Second,
		})
		if err != nil {
			t.Fatalf("bridge tor: %v", err)
		}
		t.Cleanup(func() { stopTor(t, bridgeTor) })
		fp, err = bridge.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		relayURL = bridge.RelayURL
	}
	t.Logf("bridge %s, flurry-relay at %s", fp, relayURL)

	cfg := demo.Config{
		ExternalRelayURL:  relayURL,
		BridgeFingerprint: fp,
		Proxies:           1,
		NoClient:          true,
	}
	ptArgs := loopbackClientArgs(t, bins.Client)
	if opts.netns != nil {
		cfg.BrokerHost, cfg.OpenWebRTC = opts.netns.hostAddr, true
		ptArgs = nil
	}
	c := startCluster(t, cfg)

	client, err := tortest.WriteTorClient(dir, bins.Client, c.BrokerURL, fp, ptArgs, network...)
	if err != nil {
		t.Fatal(err)
	}
	clientTorrc := opts.clientTorrc
	if len(clientTorrc) > 0 {
		f, err := os.OpenFile(client.Torrc, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.WriteString(strings.Join(clientTorrc, "\n") + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("client torrc: %s %q", client.BridgeLine, clientTorrc)
	pc := childproc.Config{
		Name: "client-tor", Path: tortest.DefaultTorPath, LogPath: dir + "/client-tor.log", Supervisor: "demo",
		Args:  []string{"-f", client.Torrc, "--defaults-torrc", os.DevNull},
		Ready: demo.TCPReady(client.SOCKSAddr),
	}
	if opts.netns != nil {
		// Its SOCKS port is on the namespace's loopback: bootstrap
		// progress (waitBootstrap) is the readiness signal.
		pc.Path, pc.Args, pc.Ready = opts.netns.ip, append([]string{"netns", "exec", opts.netns.name, tortest.DefaultTorPath}, pc.Args...), nil
	}
	clientTor, err := childproc.Start(ctx, pc)
	if err != nil {
		t.Fatalf("client tor: %v", err)
	}
	t.Cleanup(func() {
		stopTor(t, clientTor)
		if t.Failed() {
			logs := []string{client.NoticeLog, client.PTLog}
			if bridge != nil {
				logs = append(logs, bridge.NoticeLog, bridge.RelayLog)
			}
			for _, f := range logs {
				b, _ := os.ReadFile(f)
				t.Logf("==== %s\n%s", f, tail(string(b), 60))
			}
		}
	})
	return &torChain{bridge: bridge, client: client, clientTor: clientTor}
}

// waitBootstrap waits until the client's tor reports at least pct.
func (tc *torChain) waitBootstrap(t *testing.T, ctx context.Context, pct int) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got, tag := tortest.TorBootstrap(tc.client.NoticeLog)
		if got >= pct {
			t.Logf("client tor bootstrapped %d%% (%s)", got, tag)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("client tor stuck at %d%% (%s)", got, tag)
		case <-tc.clientTor.Done():
			t.Fatalf("client tor exited at %d%% (%s): %v", got, tag, tc.clientTor.ExitErr())
		case <-tick.C:
		}
	}
}

// TestTorThroughFlurry runs Debian's tor twice on loopback: a bridge whose
// server transport is flurry-relay (behind tor's ExtORPort), and a client
// whose client transport is flurry-client, with a Flurry broker and proxy
// between them. The client's tor must complete its link handshake with the
// bridge's tor through client, broker, proxy and relay (bootstrap step 15%,
// handshake_done), the relay must have reached the bridge's tor through its
// ExtORPort, and a client address reported by a proxy must reach tor as
// USERADDR.
func TestTorThroughFlurry(t *testing.T) {
	skipWithoutTor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	chain := startTorChain(t, ctx, torChainOptions{})
	bridge := chain.bridge
	chain.waitBootstrap(t, ctx, 15)

	// The bridge's tor was reached through its ExtORPort: flurry-relay
	// authenticated with tor's cookie and finished the ExtORPort
	// handshake (tor logs these steps at debug level; it does not log the
	// TRANSPORT command itself).
	if auth := tortest.GrepFile(bridge.DebugLog, "Got client's hash and it was legit"); len(auth) == 0 {
		t.Error("the bridge's tor logged no authenticated ExtORPort connection")
	}
	if done := tortest.GrepFile(bridge.DebugLog, "connection_ext_or_process_inbuf(): Received DONE"); len(done) == 0 {
		t.Error("the bridge's tor logged no completed ExtORPort handshake")
	} else {
		t.Logf("bridge tor: %s", done[0])
	}
	streams, err := demo.NewHTTPScraper().Metric(ctx, bridge.RelayMetricsURL, "flurry_relay_streams_total")
	if err != nil || streams < 1 {
		t.Errorf("relay streams_total = %v (%v), want at least 1", streams, err)
	}

	// The client's address: a proxy passes it to the relay as client_ip,
	// taken from the client's offer, but only when it is a public address,
	// and on loopback it never is. So a second client comes in as a proxy
	// would forward a client at 192.0.2.7 (a documentation address), and
	// tor must receive USERADDR 192.0.2.7 on its ExtORPort and complete a
	// TLS handshake over that connection.
	stream, closeStream := openRelayStream(t, ctx, bridge.RelayURL+"?client_ip=192.0.2.7")
	defer closeStream()
	stream.SetDeadline(time.Now().Add(20 * time.Second))
	tlsConn := tls.Client(stream, &tls.Config{InsecureSkipVerify: true, ServerName: "www.example.com"})
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		t.Fatalf("TLS handshake with the bridge's tor through the relay: %v", err)
	}
	tlsConn.Close()
	userAddr := tortest.GrepFile(bridge.DebugLog, "USERADDR")
	if !containsAny(userAddr, "192.0.2.7") {
		t.Errorf("the bridge's tor did not receive USERADDR 192.0.2.7 (debug log lines with USERADDR: %q)", userAddr)
	} else {
		t.Logf("bridge tor: %s", firstContaining(userAddr, "192.0.2.7"))
	}
}

// TestTorSocks5ProxyThroughFlurry: a tor client with Socks5Proxy in its
// torrc hands the proxy to flurry-client as TOR_PT_PROXY; flurry-client
// must accept it (PROXY DONE, or tor would not use the transport) and send
// its broker requests and its WebRTC through it, and the client's tor must
// still complete its link handshake with the bridge. The proxy is a test
// SOCKS5 server on loopback that counts what it relays.
func TestTorSocks5ProxyThroughFlurry(t *testing.T) {
	skipWithoutTor(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	socks, err := socks5test.New(socks5test.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer socks.Close()
	chain := startTorChain(t, ctx, torChainOptions{clientTorrc: []string{"Socks5Proxy " + socks.Addr()}})
	chain.waitBootstrap(t, ctx, 15)
	st := socks.Stats()
	t.Logf("SOCKS5 proxy: %+v", st)
	if st.Connects == 0 || st.Associations == 0 || st.DatagramsOut == 0 || st.DatagramsIn == 0 {
		t.Errorf("the transport did not use tor's proxy for both broker and WebRTC traffic: %+v", st)
	}
	if st.Refused != 0 {
		t.Errorf("the proxy refused %d requests or datagrams (something was not sent to loopback)", st.Refused)
	}
}

// TestTorNetworkThroughFlurry goes all the way: a private Tor network on
// loopback (one directory authority and three relays, TestingTorNetwork),
// the Flurry bridge in it, and a tor client that bootstraps through
// flurry-client, broker, proxy and relay, builds a three-hop circuit (the
// bridge, a middle relay, an exit) and downloads a file from a loopback web
// server through it.
func TestTorNetworkThroughFlurry(t *testing.T) {
	skipWithoutTorNetwork(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	target, network := startTorNetwork(t, ctx, 4<<20)
	chain := startTorChain(t, ctx, torChainOptions{network: network.Lines})
	chain.waitBootstrap(t, ctx, 100)
	res, err := demo.FetchTarget(ctx, chain.client.SOCKSAddr, target, nil)
	if err != nil {
		t.Fatalf("download through tor and Flurry: %v", err)
	}
	t.Logf("%s through tor (bridge over Flurry, middle, exit) in %v, first byte %v, SHA-256 matches",
		demo.FormatBytes(float64(res.Bytes)), res.Total.Round(time.Millisecond), res.FirstByte.Round(time.Millisecond))
}

// skipWithoutTorNetwork skips the test without tor and tor-gencert, which
// a private Tor network needs.
func skipWithoutTorNetwork(t *testing.T) {
	t.Helper()
	skipWithoutTor(t)
	if _, err := os.Stat(tortest.DefaultTorGencertPath); err != nil {
		testenv.Missing(t, "tor-gencert is not installed (%s: %v)", tortest.DefaultTorGencertPath, err)
	}
}

// startTorNetwork starts a loopback web target serving size bytes and a
// private Tor network whose exits reach it. Both stop when the test ends.
func startTorNetwork(t *testing.T, ctx context.Context, size int64) (*demo.Target, *tortest.TorNetwork) {
	t.Helper()
	target, err := demo.StartTarget(size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	port, err := strconv.Atoi(demo.Port(target.Addr))
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	network, err := tortest.StartTorNetwork(ctx, tortest.TorNetworkConfig{Dir: t.TempDir(), ExitPorts: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		hang, err := network.Close()
		if hang != nil {
			t.Logf("stopping the private Tor network: %v", hang)
		}
		if err != nil {
			t.Errorf("stopping the private Tor network: %v", err)
		}
	})
	t.Logf("private Tor network has a consensus after %v", time.Since(t0).Round(time.Millisecond))
	return target, network
}

func firstContaining(lines []string, s string) string {
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), s) {
			return l
		}
	}
	return ""
}

// loopbackClientArgs are the flurry-client flags that keep its WebRTC on
// loopback.
func loopbackClientArgs(t *testing.T, bin string) []string {
	fl := demo.ListFlags(context.Background(), bin)
	switch {
	case fl["loopback-only"]:
		return []string{"-loopback-only"}
	case fl["keep-local-addresses"]:
		return []string{"-keep-local-addresses"}
	}
	t.Log("flurry-client has neither -loopback-only nor -keep-local-addresses")
	return nil
}

func stopClean(t *testing.T, p *childproc.Process) {
	t.Helper()
	if err := p.Stop(10 * time.Second); err != nil {
		t.Errorf("stopping %s: %v", p.Name(), err)
	}
}

// stopTor stops a tor process; tor's own exit hang (tortest.Stop) is
// logged, any other failure fails the test.
func stopTor(t *testing.T, p *childproc.Process) {
	t.Helper()
	hang, err := tortest.Stop(p)
	if hang != nil {
		t.Logf("stopping %s: %v", p.Name(), hang)
	}
	if err != nil {
		t.Errorf("stopping %s: %v", p.Name(), err)
	}
}

func containsAny(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), s) {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// carrierPacketConn is the client end of one turbotunnel carrier, as a
// proxy would forward it: KCP packets in encapsulation frames over a
// WebSocket.
type carrierPacketConn struct {
	conn net.Conn
	br   *bufio.Reader
}

func (c *carrierPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, err := encapsulation.ReadData(c.br, p)
	return n, relayAddr{}, err
}

func (c *carrierPacketConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	var b bytes.Buffer
	if _, err := encapsulation.WriteData(&b, p); err != nil {
		return 0, err
	}
	if _, err := c.conn.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *carrierPacketConn) Close() error                       { return c.conn.Close() }
func (c *carrierPacketConn) LocalAddr() net.Addr                { return relayAddr{} }
func (c *carrierPacketConn) SetDeadline(t time.Time) error      { return c.conn.SetDeadline(t) }
func (c *carrierPacketConn) SetReadDeadline(t time.Time) error  { return c.conn.SetReadDeadline(t) }
func (c *carrierPacketConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }

type relayAddr struct{}

func (relayAddr) Network() string { return "relay" }
func (relayAddr) String() string  { return "relay" }

// openRelayStream connects to relayURL as a proxy carrying one client does
// (with Snowflake's client KCP and smux settings) and opens a stream, which
// the relay forwards to tor's ExtORPort. The returned function closes
// everything.
func openRelayStream(tb testing.TB, ctx context.Context, relayURL string) (net.Conn, func()) {
	tb.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, _, err := d.DialContext(ctx, relayURL, nil)
	if err != nil {
		tb.Fatalf("WebSocket to the relay: %v", err)
	}
	conn := wsconn.New(ws)
	id := turbotunnel.NewClientID()
	if _, err := conn.Write(append(turbotunnel.Token[:], id[:]...)); err != nil {
		tb.Fatal(err)
	}
	pc := &carrierPacketConn{conn: conn, br: bufio.NewReader(conn)}
	kc, err := kcp.NewConn2(relayAddr{}, nil, 0, 0, pc)
	if err != nil {
		tb.Fatal(err)
	}
	turbotunnel.ConfigureKCP(kc)
	sess, err := smux.Client(kc, turbotunnel.ClientSmuxConfig())
	if err != nil {
		tb.Fatal(err)
	}
	stream, err := sess.OpenStream()
	if err != nil {
		tb.Fatal(err)
	}
	return stream, func() {
		stream.Close()
		sess.Close()
		kc.Close()
		conn.Close()
	}
}
