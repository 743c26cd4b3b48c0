package nat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/pion/stun/v4"

	"github.com/flurrypt/flurry/messages"
)

// NAT types, as the broker knows them.
const (
	Unknown      = messages.NATUnknown
	Restricted   = messages.NATRestricted
	Unrestricted = messages.NATUnrestricted
)

// DefaultRoundTripTimeout bounds each STUN round trip when
// ProbeConfig.RoundTripTimeout is zero (Snowflake's value).
const DefaultRoundTripTimeout = 10 * time.Second

// maxSTUNMessage is the size of the buffer replies are read into.
const maxSTUNMessage = 1500

// ProbeConfig configures Probe. The zero value works.
type ProbeConfig struct {
	// ListenPacket opens the UDP socket; nil means net.ListenConfig's on
	// "udp4" ":0".
	ListenPacket func(ctx context.Context) (net.PacketConn, error)

	// Resolve returns the STUN server's address for its host:port; nil
	// means the system resolver (IPv4). A client behind a SOCKS5 proxy
	// resolves through the proxy instead.
	Resolve func(ctx context.Context, hostport string) (*net.UDPAddr, error)

	// RoundTripTimeout bounds each request; zero means
	// DefaultRoundTripTimeout.
	RoundTripTimeout time.Duration
}

// Probe runs the RFC 5780 mapping test against the STUN server at server
// (host:port) and returns Restricted or Unrestricted.
func Probe(ctx context.Context, server string, cfg ProbeConfig) (string, error) {
	listen := cfg.ListenPacket
	if listen == nil {
		listen = func(ctx context.Context) (net.PacketConn, error) {
			var lc net.ListenConfig
			return lc.ListenPacket(ctx, "udp4", ":0")
		}
	}
	rtt := cfg.RoundTripTimeout
	if rtt <= 0 {
		rtt = DefaultRoundTripTimeout
	}
	primary, err := resolveServer(ctx, server, cfg.Resolve)
	if err != nil {
		return Unknown, err
	}

	conn, err := listen(ctx)
	if err != nil {
		return Unknown, fmt.Errorf("open STUN socket: %w", err)
	}
	defer conn.Close()
	// Unblock a read when ctx ends.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	// Test I.
	reply, err := roundTrip(ctx, conn, primary, rtt)
	if err != nil {
		return Unknown, fmt.Errorf("mapping test I: %w", err)
	}
	mapped1, err := mappedAddress(reply)
	if err != nil {
		return Unknown, fmt.Errorf("mapping test I: %w", err)
	}
	var other stun.OtherAddress
	if err := other.GetFrom(reply); err != nil {
		return Unknown, ErrNoRFC5780
	}
	// Test II: the alternate address with the primary port.
	alternate := &net.UDPAddr{IP: other.IP, Port: primary.Port}
	reply, err = roundTrip(ctx, conn, alternate, rtt)
	if err != nil {
		return Unknown, fmt.Errorf("mapping test II: %w", err)
	}
	mapped2, err := mappedAddress(reply)
	if err != nil {
		return Unknown, fmt.Errorf("mapping test II: %w", err)
	}
	if mapped1.IP.Equal(mapped2.IP) && mapped1.Port == mapped2.Port {
		return Unrestricted, nil
	}
	return Restricted, nil
}

// resolveServer returns the address of the STUN server at server.
func resolveServer(ctx context.Context, server string, resolve func(context.Context, string) (*net.UDPAddr, error)) (*net.UDPAddr, error) {
	if resolve != nil {
		addr, err := resolve(ctx, server)
		if err != nil {
			return nil, fmt.Errorf("resolve STUN server: %w", err)
		}
		return addr, nil
	}
	var resolver net.Resolver
	addrs, err := resolver.LookupNetIP(ctx, "ip4", hostOf(server))
	if err != nil {
		return nil, fmt.Errorf("resolve STUN server: %w", err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolve STUN server: no IPv4 address")
	}
	port, err := portOf(server)
	if err != nil {
		return nil, err
	}
	return &net.UDPAddr{IP: addrs[0].AsSlice(), Port: port}, nil
}

// Detect probes the servers one after the other and returns the first
// result; Unknown and the last error when every probe fails.
func Detect(ctx context.Context, servers []string, cfg ProbeConfig) (string, error) {
	if len(servers) == 0 {
		return Unknown, ErrNoServers
	}
	var errs []error
	for _, s := range servers {
		t, err := Probe(ctx, s, cfg)
		if err == nil {
			return t, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return Unknown, errors.Join(errs...)
}

// roundTrip sends a Binding Request to addr and returns the matching
// response.
func roundTrip(ctx context.Context, conn net.PacketConn, addr net.Addr, timeout time.Duration) (*stun.Message, error) {
	req, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	if err != nil {
		return nil, err
	}
	if _, err := conn.WriteTo(req.Raw, addr); err != nil {
		return nil, err
	}
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	// Probe's AfterFunc may have set a past deadline that the line above
	// replaced: the context has then ended already.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	buf := make([]byte, maxSTUNMessage)
	for {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, fmt.Errorf("no STUN reply within %v", timeout)
			}
			return nil, err
		}
		if !stun.IsMessage(buf[:n]) {
			continue
		}
		resp := new(stun.Message)
		resp.Raw = append(resp.Raw[:0], buf[:n]...)
		if err := resp.Decode(); err != nil {
			continue
		}
		if resp.TransactionID != req.TransactionID {
			continue // a late reply to an earlier request
		}
		if resp.Type != stun.BindingSuccess {
			return nil, fmt.Errorf("STUN reply of type %s", resp.Type)
		}
		return resp, nil
	}
}

// mappedAddress reads XOR-MAPPED-ADDRESS, or MAPPED-ADDRESS from old
// servers.
func mappedAddress(m *stun.Message) (*net.UDPAddr, error) {
	var xor stun.XORMappedAddress
	if err := xor.GetFrom(m); err == nil {
		return &net.UDPAddr{IP: xor.IP, Port: xor.Port}, nil
	}
	var plain stun.MappedAddress
	if err := plain.GetFrom(m); err == nil {
		return &net.UDPAddr{IP: plain.IP, Port: plain.Port}, nil
	}
	return nil, errNoMappedAddress
}

func hostOf(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return h
}

func portOf(hostport string) (int, error) {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0, fmt.Errorf("STUN server %q: %w", hostport, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("STUN server %q: bad port", hostport)
	}
	return port, nil
}

// Policy decides the NAT type a client tells the broker. The zero value is
// ready: type unknown, claim unrestricted. It is safe for concurrent use.
type Policy struct {
	mu          sync.Mutex
	actual      string // "" means Unknown
	spoofFailed bool
}

// Set records the detected NAT type (Unknown, Restricted, Unrestricted).
func (p *Policy) Set(actual string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.actual = actual
}

// Actual returns the detected NAT type.
func (p *Policy) Actual() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.actual == "" {
		return Unknown
	}
	return p.actual
}

// ToSend returns the NAT type to put in the next poll request: the detected
// type, except that an unknown type is sent as Unrestricted until such a
// claim has failed once.
func (p *Policy) ToSend() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if (p.actual == "" || p.actual == Unknown) && !p.spoofFailed {
		return Unrestricted
	}
	if p.actual == "" {
		return Unknown
	}
	return p.actual
}

// ConnectionFailed records that a DataChannel failed to open after a poll
// that sent the type sent. When that was an Unrestricted claim made for
// an unknown type, later polls send Unknown.
func (p *Policy) ConnectionFailed(sent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sent == Unrestricted && (p.actual == "" || p.actual == Unknown) {
		p.spoofFailed = true
	}
}
