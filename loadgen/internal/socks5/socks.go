package socks5

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// ErrSOCKS is returned when a SOCKS5 proxy refuses or garbles a
// connection.
var ErrSOCKS = errors.New("socks5")

// Dialer connects through a SOCKS5 proxy (RFC 1928), with optional
// username/password authentication (RFC 1929), which is how tor hands
// pluggable-transport arguments to a client such as flurry-client.
type Dialer struct {
	Proxy          string
	User, Password string
	Dialer         interface {
		DialContext(ctx context.Context, network, addr string) (net.Conn, error)
	}
}

// socksTimeout bounds a SOCKS handshake whose context has no deadline:
// tor's SocksTimeout.
const socksTimeout = 2 * time.Minute

// SOCKS5 constants.
const (
	socksVersion      = 5
	socksNoAuth       = 0
	socksUserPass     = 2
	socksNoAcceptable = 0xff
	socksConnect      = 1
	socksIPv4         = 1
	socksDomain       = 3
	socksIPv6         = 4
)

// DialContext connects to addr (host:port) through the proxy. The
// handshake is bounded by ctx's deadline, or socksTimeout without one.
//
//	client: 05 n methods...           server: 05 method
//	[client: 01 ulen user plen pass   server: 01 status]
//	client: 05 01 00 atyp addr port   server: 05 rep 00 atyp addr port
func (d *Dialer) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: target %q: %w", ErrSOCKS, addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("%w: target port %q", ErrSOCKS, portStr)
	}
	c, err := d.Dialer.DialContext(ctx, "tcp", d.Proxy)
	if err != nil {
		return nil, err
	}
	// The reply waits for the client's rendezvous, which with few proxies
	// can take several of their poll intervals, so no shorter bound than
	// the caller's (tor waits 2 minutes: SocksTimeout).
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(socksTimeout)
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := d.handshake(c, host, uint16(port)); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// handshake negotiates the method (and authenticates) on c, then asks
// the proxy to connect to host:port and reads its reply.
func (d *Dialer) handshake(c net.Conn, host string, port uint16) error {
	if err := d.authenticate(c); err != nil {
		return err
	}
	req, err := connectRequest(host, port)
	if err != nil {
		return err
	}
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("%w: connect request: %w", ErrSOCKS, err)
	}
	return readConnectReply(c)
}

// authenticate negotiates no authentication, or user/password (RFC 1929)
// when the dialer has a user or password, and authenticates.
func (d *Dialer) authenticate(c net.Conn) error {
	greeting := []byte{socksVersion, 1, socksNoAuth}
	if d.User != "" || d.Password != "" {
		greeting = []byte{socksVersion, 1, socksUserPass}
	}
	if _, err := c.Write(greeting); err != nil {
		return fmt.Errorf("%w: greeting: %w", ErrSOCKS, err)
	}
	var reply [2]byte
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return fmt.Errorf("%w: greeting reply: %w", ErrSOCKS, err)
	}
	if reply[0] != socksVersion || reply[1] != greeting[2] {
		return fmt.Errorf("%w: proxy refused authentication method %d (replied %d)", ErrSOCKS, greeting[2], reply[1])
	}
	if greeting[2] != socksUserPass {
		return nil
	}
	if len(d.User) > 255 || len(d.Password) > 255 {
		return fmt.Errorf("%w: username or password longer than 255 bytes", ErrSOCKS)
	}
	auth := []byte{1, byte(len(d.User))}
	auth = append(auth, d.User...)
	auth = append(auth, byte(len(d.Password)))
	auth = append(auth, d.Password...)
	if _, err := c.Write(auth); err != nil {
		return fmt.Errorf("%w: auth: %w", ErrSOCKS, err)
	}
	if _, err := io.ReadFull(c, reply[:]); err != nil {
		return fmt.Errorf("%w: auth reply: %w", ErrSOCKS, err)
	}
	if reply[1] != 0 {
		return fmt.Errorf("%w: authentication failed (status %d)", ErrSOCKS, reply[1])
	}
	return nil
}

// connectRequest is the CONNECT request for host (an IP address or a
// name) and port.
func connectRequest(host string, port uint16) ([]byte, error) {
	req := []byte{socksVersion, socksConnect, 0}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Is4() || ip.Is4In6() {
			req = append(req, socksIPv4)
			b := ip.Unmap().As4()
			req = append(req, b[:]...)
		} else {
			req = append(req, socksIPv6)
			b := ip.As16()
			req = append(req, b[:]...)
		}
	} else {
		if len(host) > 255 {
			return nil, fmt.Errorf("%w: host name too long", ErrSOCKS)
		}
		req = append(req, socksDomain, byte(len(host)))
		req = append(req, host...)
	}
	return binary.BigEndian.AppendUint16(req, port), nil
}

// readConnectReply reads the reply to CONNECT, bound address included.
func readConnectReply(c net.Conn) error {
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return fmt.Errorf("%w: connect reply: %w", ErrSOCKS, err)
	}
	if head[0] != socksVersion {
		return fmt.Errorf("%w: reply version %d", ErrSOCKS, head[0])
	}
	if head[1] != 0 {
		return fmt.Errorf("%w: connect refused: %s", ErrSOCKS, socksReplyText(head[1]))
	}
	var skip int
	switch head[3] {
	case socksIPv4:
		skip = 4
	case socksIPv6:
		skip = 16
	case socksDomain:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return fmt.Errorf("%w: connect reply: %w", ErrSOCKS, err)
		}
		skip = int(n[0])
	default:
		return fmt.Errorf("%w: reply address type %d", ErrSOCKS, head[3])
	}
	bound := make([]byte, skip+2)
	if _, err := io.ReadFull(c, bound); err != nil {
		return fmt.Errorf("%w: connect reply: %w", ErrSOCKS, err)
	}
	return nil
}

func socksReplyText(rep byte) string {
	texts := [...]string{1: "general failure", 2: "not allowed by ruleset", 3: "network unreachable",
		4: "host unreachable", 5: "connection refused", 6: "TTL expired", 7: "command not supported",
		8: "address type not supported"}
	if int(rep) < len(texts) && texts[rep] != "" {
		return texts[rep]
	}
	return "reply code " + strconv.Itoa(int(rep))
}
