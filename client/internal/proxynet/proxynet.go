package proxynet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/transport/v5"

	"github.com/flurrypt/flurry/client/internal/socks5udp"
)

// Defaults for zero Config fields.
const (
	DefaultAssociateTimeout = 5 * time.Second
	DefaultResolveTimeout   = 3 * time.Second
)

// InterfaceName is the name of the virtual interface.
const InterfaceName = "socks5"

// interfaceIndex is the virtual interface's index, far from real ones.
const interfaceIndex = 1 << 20

// Name resolution cache.
const (
	resolvedTTL = 10 * time.Minute
	maxResolved = 64 // entries; the cache is emptied when full
	// firstRetransmit is the first STUN retransmission timeout when
	// resolving a name (RFC 5389's RTO of 500 ms, doubled each time).
	firstRetransmit = 500 * time.Millisecond
	maxSTUNReply    = 1500
)

// Config configures a Net.
type Config struct {
	// SOCKS makes the UDP associations. Required.
	SOCKS *socks5udp.Client

	// AssociateTimeout bounds each association made for pion; zero means
	// DefaultAssociateTimeout.
	AssociateTimeout time.Duration

	// ResolveTimeout bounds resolving a name (the proxy's own, or a STUN
	// server's through the proxy) for pion; zero means
	// DefaultResolveTimeout.
	ResolveTimeout time.Duration

	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

// Net is a pion transport.Net over a SOCKS5 proxy. It is safe for
// concurrent use.
type Net struct {
	socks            *socks5udp.Client
	proxyHost        string
	associateTimeout time.Duration
	resolveTimeout   time.Duration
	log              *slog.Logger

	mu       sync.Mutex // guards resolved
	resolved map[string]resolvedAddr
}

// resolvedAddr is a cached name resolution.
type resolvedAddr struct {
	addr    netip.AddrPort
	expires time.Time
}

var _ transport.Net = (*Net)(nil)

// New checks cfg and returns a Net.
func New(cfg Config) (*Net, error) {
	if cfg.SOCKS == nil {
		return nil, errors.New("proxynet: no SOCKS5 client")
	}
	host, _, err := net.SplitHostPort(cfg.SOCKS.ProxyAddr())
	if err != nil {
		return nil, fmt.Errorf("proxynet: proxy address: %w", err)
	}
	if cfg.AssociateTimeout <= 0 {
		cfg.AssociateTimeout = DefaultAssociateTimeout
	}
	if cfg.ResolveTimeout <= 0 {
		cfg.ResolveTimeout = DefaultResolveTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Net{
		socks:            cfg.SOCKS,
		proxyHost:        host,
		associateTimeout: cfg.AssociateTimeout,
		resolveTimeout:   cfg.ResolveTimeout,
		log:              cfg.Logger,
		resolved:         make(map[string]resolvedAddr),
	}, nil
}

// Associate makes a UDP association (for callers with a context, such as
// NAT detection).
func (n *Net) Associate(ctx context.Context) (net.PacketConn, error) {
	pc, err := n.socks.Associate(ctx)
	if err != nil {
		return nil, err
	}
	return pc, nil
}

// associate makes an association for pion, bounded by AssociateTimeout.
func (n *Net) associate(network string) (*socks5udp.PacketConn, error) {
	if err := checkUDP(network); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.associateTimeout)
	defer cancel()
	pc, err := n.socks.Associate(ctx)
	if err != nil {
		n.log.Debug("SOCKS5 UDP ASSOCIATE failed", "err", err)
		return nil, err
	}
	return pc, nil
}

func checkUDP(network string) error {
	switch network {
	case "udp", "udp4", "udp6":
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNetwork, network)
}

// ListenPacket makes a UDP association; the address is ignored (the relay
// address is the proxy's choice).
func (n *Net) ListenPacket(network, _ string) (net.PacketConn, error) {
	pc, err := n.associate(network)
	if err != nil {
		return nil, err // not a nil *PacketConn in an interface
	}
	return pc, nil
}

// ListenUDP makes a UDP association; the local address is ignored.
func (n *Net) ListenUDP(network string, _ *net.UDPAddr) (transport.UDPConn, error) {
	pc, err := n.associate(network)
	if err != nil {
		return nil, err // not a nil *PacketConn in an interface
	}
	return pc, nil
}

// ListenTCP fails: no TCP candidates through the proxy.
func (n *Net) ListenTCP(string, *net.TCPAddr) (transport.TCPListener, error) {
	return nil, ErrNotSupported
}

// Dial fails: pion dials only for TURN and ICE-TCP, which are not used.
func (n *Net) Dial(string, string) (net.Conn, error) { return nil, ErrNotSupported }

// DialUDP fails (see Dial).
func (n *Net) DialUDP(string, *net.UDPAddr, *net.UDPAddr) (transport.UDPConn, error) {
	return nil, ErrNotSupported
}

// DialTCP fails (see Dial).
func (n *Net) DialTCP(string, *net.TCPAddr, *net.TCPAddr) (transport.TCPConn, error) {
	return nil, ErrNotSupported
}

// ResolveIPAddr accepts IP literals only.
func (n *Net) ResolveIPAddr(_, address string) (*net.IPAddr, error) {
	ip, err := netip.ParseAddr(address)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not an IP address", ErrNotSupported, address)
	}
	return &net.IPAddr{IP: ip.AsSlice(), Zone: ip.Zone()}, nil
}

// ResolveTCPAddr accepts IP literals only.
func (n *Net) ResolveTCPAddr(_, address string) (*net.TCPAddr, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not an IP address and port", ErrNotSupported, address)
	}
	return net.TCPAddrFromAddrPort(ap), nil
}

// ResolveUDPAddr returns an IP literal as it is and resolves a name
// through the proxy (see ResolveSTUN), bounded by ResolveTimeout.
func (n *Net) ResolveUDPAddr(network, address string) (*net.UDPAddr, error) {
	if err := checkUDP(network); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.resolveTimeout)
	defer cancel()
	addr, err := n.ResolveSTUN(ctx, address)
	if err != nil {
		return nil, err
	}
	ip, _ := netip.AddrFromSlice(addr.IP)
	ip = ip.Unmap()
	if (network == "udp4" && !ip.Is4()) || (network == "udp6" && !ip.Is6()) {
		return nil, fmt.Errorf("%w: %s has no %s address", ErrResolve, address, network)
	}
	return addr, nil
}

// ResolveSTUN returns the address of the STUN server at hostport. An IP
// literal is returned as it is; for a name, a STUN Binding Request goes to
// the name through the proxy, which resolves it, and the source of the
// reply, as the proxy reports it, is the server's address. Results are
// kept for ten minutes.
func (n *Net) ResolveSTUN(ctx context.Context, hostport string) (*net.UDPAddr, error) {
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResolve, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("%w: bad port in %q", ErrResolve, hostport)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return &net.UDPAddr{IP: ip.Unmap().AsSlice(), Port: port, Zone: ip.Zone()}, nil
	}
	key := hostport
	now := time.Now()
	n.mu.Lock()
	if r, ok := n.resolved[key]; ok && now.Before(r.expires) {
		n.mu.Unlock()
		return net.UDPAddrFromAddrPort(r.addr), nil
	}
	n.mu.Unlock()

	addr, err := n.stunProbe(ctx, socks5udp.DomainAddr{Name: host, Port: uint16(port)})
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	if len(n.resolved) >= maxResolved {
		clear(n.resolved)
	}
	n.resolved[key] = resolvedAddr{addr: addr, expires: now.Add(resolvedTTL)}
	n.mu.Unlock()
	return net.UDPAddrFromAddrPort(addr), nil
}

// stunProbe sends Binding Requests to dst through a new association,
// retransmitting with a doubling timeout, and returns the source of the
// first matching reply.
func (n *Net) stunProbe(ctx context.Context, dst socks5udp.DomainAddr) (netip.AddrPort, error) {
	pc, err := n.socks.Associate(ctx)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%w: %w", ErrResolve, err)
	}
	defer pc.Close()
	stop := context.AfterFunc(ctx, func() { _ = pc.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	req, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	if err != nil {
		return netip.AddrPort{}, err
	}
	buf := make([]byte, maxSTUNReply)
	rto := firstRetransmit
	for {
		if _, err := pc.WriteTo(req.Raw, dst); err != nil {
			return netip.AddrPort{}, fmt.Errorf("%w: %w", ErrResolve, err)
		}
		if err := pc.SetReadDeadline(time.Now().Add(rto)); err != nil {
			return netip.AddrPort{}, err
		}
		for {
			nr, from, err := pc.ReadFrom(buf)
			if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				break // retransmit
			}
			if err != nil {
				if ctx.Err() != nil {
					return netip.AddrPort{}, fmt.Errorf("%w: %s: no STUN reply: %w", ErrResolve, dst.Name, ctx.Err())
				}
				return netip.AddrPort{}, fmt.Errorf("%w: %w", ErrResolve, err)
			}
			if !stun.IsMessage(buf[:nr]) {
				continue
			}
			resp := &stun.Message{Raw: buf[:nr]}
			if resp.Decode() != nil || resp.TransactionID != req.TransactionID {
				continue
			}
			udp, ok := from.(*net.UDPAddr)
			if !ok {
				continue
			}
			ap := udp.AddrPort()
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
		}
		rto *= 2
	}
}

// proxyIP returns the proxy's IP address (resolving its name if needed).
func (n *Net) proxyIP() (netip.Addr, error) {
	if ip, err := netip.ParseAddr(n.proxyHost); err == nil {
		return ip.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.resolveTimeout)
	defer cancel()
	addrs, err := (&net.Resolver{}).LookupNetIP(ctx, "ip", n.proxyHost)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("resolve SOCKS5 proxy: %w", err)
	}
	for _, a := range addrs {
		if a.Unmap().Is4() {
			return a.Unmap(), nil
		}
	}
	return addrs[0], nil
}

// Interfaces returns the virtual interface carrying the proxy's address.
func (n *Net) Interfaces() ([]*transport.Interface, error) {
	ifc, err := n.virtualInterface()
	if err != nil {
		return nil, err
	}
	return []*transport.Interface{ifc}, nil
}

func (n *Net) virtualInterface() (*transport.Interface, error) {
	ip, err := n.proxyIP()
	if err != nil {
		return nil, err
	}
	flags := net.FlagUp | net.FlagRunning
	if ip.IsLoopback() {
		flags |= net.FlagLoopback
	}
	ifc := transport.NewInterface(net.Interface{Index: interfaceIndex, MTU: 1500, Name: InterfaceName, Flags: flags})
	bits := ip.BitLen()
	ifc.AddAddress(&net.IPNet{IP: ip.AsSlice(), Mask: net.CIDRMask(bits, bits)})
	return ifc, nil
}

// InterfaceByIndex returns the virtual interface for its index.
func (n *Net) InterfaceByIndex(index int) (*transport.Interface, error) {
	if index != interfaceIndex {
		return nil, ErrNoInterface
	}
	return n.virtualInterface()
}

// InterfaceByName returns the virtual interface for its name.
func (n *Net) InterfaceByName(name string) (*transport.Interface, error) {
	if name != InterfaceName {
		return nil, ErrNoInterface
	}
	return n.virtualInterface()
}

// CreateDialer returns a dialer that fails (see Dial).
func (n *Net) CreateDialer(*net.Dialer) transport.Dialer { return refusingDialer{} }

// CreateListenConfig returns a ListenConfig whose ListenPacket makes an
// association and whose Listen fails.
func (n *Net) CreateListenConfig(*net.ListenConfig) transport.ListenConfig {
	return listenConfig{n: n}
}

type refusingDialer struct{}

func (refusingDialer) Dial(string, string) (net.Conn, error) { return nil, ErrNotSupported }

type listenConfig struct{ n *Net }

func (l listenConfig) Listen(context.Context, string, string) (net.Listener, error) {
	return nil, ErrNotSupported
}

func (l listenConfig) ListenPacket(ctx context.Context, network, _ string) (net.PacketConn, error) {
	if err := checkUDP(network); err != nil {
		return nil, err
	}
	return l.n.Associate(ctx)
}
