package socks5udp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultHandshakeTimeout bounds Associate when Config.HandshakeTimeout is
// zero (and the context has no earlier deadline).
const DefaultHandshakeTimeout = 10 * time.Second

// writeBufferSize is the write buffer a PacketConn keeps: an IPv6 header
// and a full-size Ethernet payload. Bigger datagrams are built in a buffer
// that is dropped after the write.
const writeBufferSize = ipv6HeaderLen + 1500

// Config configures a Client.
type Config struct {
	// ProxyAddr is the proxy's host:port. Required.
	ProxyAddr string

	// Username and Password authenticate with RFC 1929 when Username is
	// not empty (1 to 255 bytes; the password 0 to 255 bytes). Without a
	// username only "no authentication" is offered.
	Username, Password string

	// DialContext opens the control connection; nil means a net.Dialer.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// HandshakeTimeout bounds each Associate; zero means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// Client makes UDP associations through one SOCKS5 proxy. It holds no
// connection of its own and is safe for concurrent use.
type Client struct {
	cfg Config
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	host, port, err := net.SplitHostPort(cfg.ProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: proxy address: %w", ErrInvalidConfig, err)
	}
	if host == "" {
		return nil, fmt.Errorf("%w: proxy address has no host", ErrInvalidConfig)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return nil, fmt.Errorf("%w: proxy port %q", ErrInvalidConfig, port)
	}
	if len(cfg.Username) > maxCredentialLen || len(cfg.Password) > maxCredentialLen {
		return nil, fmt.Errorf("%w: username and password are at most %d bytes", ErrInvalidConfig, maxCredentialLen)
	}
	if cfg.Username == "" && cfg.Password != "" {
		return nil, fmt.Errorf("%w: password without a username", ErrInvalidConfig)
	}
	if cfg.HandshakeTimeout < 0 {
		return nil, fmt.Errorf("%w: negative handshake timeout", ErrInvalidConfig)
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.DialContext == nil {
		cfg.DialContext = (&net.Dialer{}).DialContext
	}
	return &Client{cfg: cfg}, nil
}

// ProxyAddr returns the proxy's host:port.
func (c *Client) ProxyAddr() string { return c.cfg.ProxyAddr }

// Associate opens a UDP association: a control connection to the proxy
// and a UDP socket connected to the relay address the proxy named.
func (c *Client) Associate(ctx context.Context) (*PacketConn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	control, err := c.cfg.DialContext(ctx, "tcp", c.cfg.ProxyAddr)
	if err != nil {
		return nil, fmt.Errorf("connect to SOCKS5 proxy: %w", err)
	}
	pc, err := c.associate(ctx, control)
	if err != nil {
		_ = control.Close()
		return nil, err
	}
	return pc, nil
}

func (c *Client) associate(ctx context.Context, control net.Conn) (*PacketConn, error) {
	if deadline, ok := ctx.Deadline(); ok {
		if err := control.SetDeadline(deadline); err != nil {
			return nil, err
		}
	}
	// A cancelled context interrupts the handshake.
	stop := context.AfterFunc(ctx, func() { _ = control.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := greet(control, c.cfg.Username, c.cfg.Password); err != nil {
		return nil, ctxErr(ctx, err)
	}
	ip, name, port, err := requestAssociate(control)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if !ip.IsValid() {
		addrs, err := (&net.Resolver{}).LookupNetIP(ctx, "ip", name)
		if err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("%w: cannot resolve the relay's name", ErrProtocol)
		}
		ip = addrs[0]
	}
	relay, err := relayAddr(ip, port, control)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", relay.String())
	if err != nil {
		return nil, fmt.Errorf("open UDP socket to the relay: %w", err)
	}
	if !stop() {
		_ = conn.Close()
		return nil, ctx.Err()
	}
	if err := control.SetDeadline(time.Time{}); err != nil {
		_ = conn.Close()
		return nil, err
	}
	pc := &PacketConn{
		control:   control,
		udp:       conn.(*net.UDPConn),
		relay:     net.UDPAddrFromAddrPort(relay),
		watchDone: make(chan struct{}),
	}
	go pc.watch()
	return pc, nil
}

// ctxErr prefers the context's error to the I/O error it caused (the
// connection's deadline is the context's, and may fire first).
func ctxErr(ctx context.Context, err error) error {
	if d, ok := ctx.Deadline(); ok && ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
		return fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// DomainAddr is a destination given by name, resolved by the proxy.
type DomainAddr struct {
	Name string
	Port uint16
}

// Network returns "udp".
func (a DomainAddr) Network() string { return "udp" }

// String returns name:port.
func (a DomainAddr) String() string { return net.JoinHostPort(a.Name, strconv.Itoa(int(a.Port))) }

// PacketConn is a UDP association: datagrams to and from any address,
// through the proxy's relay. ReadFrom and WriteTo may run concurrently;
// Close may be called from any goroutine and is idempotent.
type PacketConn struct {
	control net.Conn
	udp     *net.UDPConn // connected to the relay: the kernel drops datagrams from elsewhere
	relay   *net.UDPAddr

	dropped atomic.Uint64 // received datagrams dropped (malformed, fragmented, named source)

	writeMu  sync.Mutex
	writeBuf []byte // guarded by writeMu; writeBufferSize bytes once used

	mu        sync.Mutex // guards endErr
	endErr    error      // why the association ended: ErrAssociationEnded or net.ErrClosed
	closeOnce sync.Once
	watchDone chan struct{} // closed when the control watcher has returned
}

// watch reads the control connection until it fails: the proxy closed it
// (the association is over) or Close did. Bytes the proxy sends on it are
// discarded. It then closes the UDP socket, so blocked reads return.
func (c *PacketConn) watch() {
	defer close(c.watchDone)
	var buf [64]byte
	for {
		if _, err := c.control.Read(buf[:]); err != nil {
			break
		}
	}
	c.end(ErrAssociationEnded)
	_ = c.udp.Close()
}

// end records the first reason the association ended.
func (c *PacketConn) end(reason error) {
	c.mu.Lock()
	if c.endErr == nil {
		c.endErr = reason
	}
	c.mu.Unlock()
}

// ioError adds the association's end to an error of the UDP socket.
func (c *PacketConn) ioError(op string, err error) error {
	c.mu.Lock()
	reason := c.endErr
	c.mu.Unlock()
	if errors.Is(reason, ErrAssociationEnded) && errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("socks5 %s: %w (%w)", op, ErrAssociationEnded, net.ErrClosed)
	}
	return err
}

// Close ends the association: it closes the control connection and the UDP
// socket and waits for the watcher. It is idempotent.
func (c *PacketConn) Close() error {
	c.closeOnce.Do(func() {
		c.end(net.ErrClosed)
		_ = c.control.Close()
		_ = c.udp.Close()
	})
	<-c.watchDone
	return nil
}

// Done returns a channel that is closed when the association has ended
// (the proxy closed the control connection, or Close was called).
func (c *PacketConn) Done() <-chan struct{} { return c.watchDone }

// Dropped returns how many received datagrams were dropped: malformed
// headers, fragments (FRAG other than 0) and sources given by name.
func (c *PacketConn) Dropped() uint64 { return c.dropped.Load() }

// LocalAddr returns the relay address: where the proxy receives this
// association's datagrams.
func (c *PacketConn) LocalAddr() net.Addr { return c.relay }

// RemoteAddr returns nil: a PacketConn has no default destination.
func (c *PacketConn) RemoteAddr() net.Addr { return nil }

// ReadFrom reads the next datagram's payload into p and returns the address
// it came from. The datagram is read whole into p (header included) and the
// payload moved to the start, so p needs room for the header too; as with
// UDP, a datagram longer than p is truncated.
func (c *PacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromUDP(p)
	if err != nil {
		return n, nil, err
	}
	return n, addr, nil
}

// ReadFromUDP is ReadFrom returning a *net.UDPAddr.
func (c *PacketConn) ReadFromUDP(p []byte) (int, *net.UDPAddr, error) {
	for {
		n, err := c.udp.Read(p)
		if err != nil {
			return 0, nil, c.ioError("read", err)
		}
		h, hl, err := parseHeader(p[:n])
		if err != nil || h.frag != 0 || !h.ip.IsValid() {
			c.dropped.Add(1)
			continue
		}
		m := copy(p, p[hl:n])
		return m, &net.UDPAddr{IP: h.ip.Unmap().AsSlice(), Port: int(h.port)}, nil
	}
}

// ReadMsgUDP is ReadFromUDP for callers of pion's UDPConn; no out-of-band
// data is returned.
func (c *PacketConn) ReadMsgUDP(p, _ []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	n, addr, err = c.ReadFromUDP(p)
	return n, 0, 0, addr, err
}

// Read reads a datagram's payload, dropping its source address.
func (c *PacketConn) Read(p []byte) (int, error) {
	n, _, err := c.ReadFromUDP(p)
	return n, err
}

// WriteTo sends p to addr (a *net.UDPAddr, or a DomainAddr the proxy
// resolves) through the relay.
func (c *PacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	switch a := addr.(type) {
	case *net.UDPAddr:
		return c.WriteToUDP(p, a)
	case DomainAddr:
		return c.write(p, netip.Addr{}, a.Name, a.Port)
	case *DomainAddr:
		if a == nil {
			return 0, ErrAddress
		}
		return c.write(p, netip.Addr{}, a.Name, a.Port)
	default:
		return 0, fmt.Errorf("%w: %T", ErrAddress, addr)
	}
}

// WriteToUDP sends p to addr through the relay.
func (c *PacketConn) WriteToUDP(p []byte, addr *net.UDPAddr) (int, error) {
	if addr == nil {
		return 0, ErrAddress
	}
	ip, ok := netip.AddrFromSlice(addr.IP)
	if !ok || addr.Port < 1 || addr.Port > 65535 {
		return 0, fmt.Errorf("%w: %v", ErrAddress, addr)
	}
	return c.write(p, ip.Unmap(), "", uint16(addr.Port))
}

// WriteMsgUDP is WriteToUDP for callers of pion's UDPConn; out-of-band
// data is not supported.
func (c *PacketConn) WriteMsgUDP(p, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if len(oob) > 0 {
		return 0, 0, fmt.Errorf("%w: out-of-band data", ErrAddress)
	}
	n, err = c.WriteToUDP(p, addr)
	return n, 0, err
}

// Write fails: a PacketConn has no default destination.
func (c *PacketConn) Write([]byte) (int, error) { return 0, ErrNotConnected }

func (c *PacketConn) write(p []byte, ip netip.Addr, name string, port uint16) (int, error) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.writeBuf == nil {
		c.writeBuf = make([]byte, 0, writeBufferSize)
	}
	buf, err := appendHeader(c.writeBuf[:0], ip, name, port)
	if err != nil {
		return 0, err
	}
	if len(buf)+len(p) > MaxDatagramSize {
		return 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, len(buf)+len(p))
	}
	buf = append(buf, p...) // a bigger buffer for a big datagram, not kept
	if _, err := c.udp.Write(buf); err != nil {
		return 0, c.ioError("write", err)
	}
	return len(p), nil
}

// SetDeadline sets the read and write deadlines of the UDP socket.
func (c *PacketConn) SetDeadline(t time.Time) error { return c.udp.SetDeadline(t) }

// SetReadDeadline sets the read deadline of the UDP socket.
func (c *PacketConn) SetReadDeadline(t time.Time) error { return c.udp.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline of the UDP socket.
func (c *PacketConn) SetWriteDeadline(t time.Time) error { return c.udp.SetWriteDeadline(t) }

// SetReadBuffer sets the UDP socket's receive buffer.
func (c *PacketConn) SetReadBuffer(n int) error { return c.udp.SetReadBuffer(n) }

// SetWriteBuffer sets the UDP socket's send buffer.
func (c *PacketConn) SetWriteBuffer(n int) error { return c.udp.SetWriteBuffer(n) }
