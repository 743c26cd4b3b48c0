package relay

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	kcp "github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/internal/testkit/wsconn"
)

// This file is a test client speaking Snowflake's client wire format
// (docs/design.md, "Byte layers"): each carrier is a WebSocket that starts with the
// token and the ClientID as two messages, then carries encapsulated KCP
// packets, one per message; KCP and smux use Snowflake's client parameters.
// It can hold several carriers at once (spreading its packets over them)
// and lose and add carriers at any time.

// testCarrier is one WebSocket of a testClient.
type testCarrier struct {
	conn    net.Conn
	raw     net.Conn     // the TCP connection under the WebSocket
	packets atomic.Int64 // packets received on this carrier
	sent    atomic.Int64 // packets sent on this carrier
	idle    atomic.Bool  // WriteTo passes it over: a standby proxy's
	done    chan struct{}

	// Sealed carriers (seal_test.go): the directions, and the join header
	// sent.
	wmu    sync.Mutex // orders sealed writes
	send   *tunnelseal.Stream
	recv   *tunnelseal.Stream
	header []byte
}

// kill drops the carrier abruptly, as a dying proxy would.
func (c *testCarrier) kill() { c.raw.Close() }

// testPacketConn is a net.PacketConn over the carriers of one ClientID.
type testPacketConn struct {
	id       turbotunnel.ClientID
	addr     net.Addr           // id.Addr(), made once: what ReadFrom returns
	seal     *tunnelseal.Client // sealed carriers if set (newSealedPacketConn)
	incoming chan []byte
	closed   chan struct{}
	once     sync.Once
	wg       sync.WaitGroup

	mu       sync.Mutex
	carriers []*testCarrier // guarded by mu
	next     int            // guarded by mu
}

func newTestPacketConn(id turbotunnel.ClientID) *testPacketConn {
	return &testPacketConn{id: id, addr: id.Addr(), incoming: make(chan []byte, 1024), closed: make(chan struct{})}
}

// dialCarrier opens a WebSocket to wsURL, sends the token and the ClientID,
// and starts reading packets from it.
func (p *testPacketConn) dialCarrier(tb testing.TB, wsURL string) *testCarrier {
	tb.Helper()
	return p.dial(tb, wsURL, false)
}

// dialStandby is dialCarrier for a carrier that WriteTo passes over (idle)
// until the test says otherwise.
func (p *testPacketConn) dialStandby(tb testing.TB, wsURL string) *testCarrier {
	tb.Helper()
	return p.dial(tb, wsURL, true)
}

func (p *testPacketConn) dial(tb testing.TB, wsURL string, idle bool) *testCarrier {
	tb.Helper()
	ws, err := dialWS(wsURL)
	if err != nil {
		tb.Fatalf("dial carrier: %v", err)
	}
	c := &testCarrier{conn: wsconn.New(ws), raw: ws.UnderlyingConn(), done: make(chan struct{})}
	c.idle.Store(idle)
	if p.seal != nil {
		p.joinSealed(tb, c)
	} else {
		if _, err := c.conn.Write(turbotunnel.Token[:]); err != nil {
			tb.Fatal(err)
		}
		if _, err := c.conn.Write(p.id[:]); err != nil {
			tb.Fatal(err)
		}
	}
	p.mu.Lock()
	p.carriers = append(p.carriers, c)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(c.done)
		defer p.remove(c)
		buf := make([]byte, 2048)
		for {
			n, err := encapsulation.ReadData(c.conn, buf)
			if err == nil && c.recv != nil {
				var pkt []byte
				pkt, err = c.recv.Open(buf[:n])
				n = len(pkt)
			}
			if err != nil {
				c.conn.Close()
				return
			}
			c.packets.Add(1)
			select {
			case p.incoming <- append([]byte(nil), buf[:n]...):
			case <-p.closed:
				return
			default: // full: drop, KCP retransmits
			}
		}
	}()
	return c
}

func (p *testPacketConn) remove(c *testCarrier) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.carriers {
		if x == c {
			p.carriers = append(p.carriers[:i], p.carriers[i+1:]...)
			return
		}
	}
}

func (p *testPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case pkt := <-p.incoming:
		return copy(b, pkt), p.addr, nil
	case <-p.closed:
		return 0, nil, net.ErrClosed
	}
}

// WriteTo sends one packet on the next carrier, round robin. Without a
// carrier the packet is lost, as on a real client between proxies.
func (p *testPacketConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	select {
	case <-p.closed:
		return 0, net.ErrClosed
	default:
	}
	p.mu.Lock()
	if len(p.carriers) == 0 {
		p.mu.Unlock()
		return len(b), nil
	}
	var c *testCarrier
	for range len(p.carriers) {
		if c = p.carriers[p.next%len(p.carriers)]; !c.idle.Load() {
			break
		}
		p.next++
	}
	p.next++
	p.mu.Unlock()
	if c.idle.Load() {
		return len(b), nil // no carrier in use
	}
	var msg bytes.Buffer
	if c.send != nil {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		chunk, _ := c.send.AppendChunk(nil, b)
		msg.Write(chunk)
	} else {
		encapsulation.WriteData(&msg, b)
	}
	if _, err := c.conn.Write(msg.Bytes()); err == nil {
		c.sent.Add(1)
	}
	return len(b), nil
}

func (p *testPacketConn) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.mu.Lock()
		cs := append([]*testCarrier(nil), p.carriers...)
		p.mu.Unlock()
		for _, c := range cs {
			c.conn.Close()
		}
	})
	p.wg.Wait()
	return nil
}

func (p *testPacketConn) LocalAddr() net.Addr              { return p.id }
func (p *testPacketConn) SetDeadline(time.Time) error      { return nil }
func (p *testPacketConn) SetReadDeadline(time.Time) error  { return nil }
func (p *testPacketConn) SetWriteDeadline(time.Time) error { return nil }

// dialWS opens a WebSocket to wsURL over loopback.
func dialWS(wsURL string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.DialContext(context.Background(), wsURL, nil)
	if resp != nil {
		resp.Body.Close()
	}
	return ws, err
}

// testClient is a Snowflake-style turbotunnel client session.
type testClient struct {
	pconn *testPacketConn
	kcp   *kcp.UDPSession
	smux  *smux.Session
}

// newTestClient starts KCP and smux over pconn with Snowflake's client
// parameters. Carriers may be added before or after.
func newTestClient(tb testing.TB, pconn *testPacketConn) *testClient {
	tb.Helper()
	conn, err := kcp.NewConn2(pconn.id, nil, 0, 0, pconn)
	if err != nil {
		tb.Fatal(err)
	}
	turbotunnel.ConfigureKCP(conn)
	sess, err := smux.Client(conn, turbotunnel.ClientSmuxConfig())
	if err != nil {
		tb.Fatal(err)
	}
	c := &testClient{pconn: pconn, kcp: conn, smux: sess}
	tb.Cleanup(c.Close)
	return c
}

func (c *testClient) Close() {
	c.smux.Close()
	c.kcp.Close()
	c.pconn.Close()
}

// echoServer is a TCP echo server on loopback that passes half-closes on.
func echoServer(tb testing.TB) string {
	tb.Helper()
	return loopback.Accept(tb, func(c net.Conn) {
		io.Copy(c, c)
		c.(*net.TCPConn).CloseWrite()
	})
}

// startRelay runs a relay configured by cfg on a loopback listener until
// the test ends, and returns it with its ws:// URL.
func startRelay(tb testing.TB, cfg Config) (*Relay, string) {
	tb.Helper()
	r, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() }) // after Serve has returned
	u := url.URL{Scheme: "ws", Host: loopback.Serve(tb, r.Serve, ErrClosed), Path: "/", RawQuery: "client_ip=192.0.2.7"}
	return r, u.String()
}
