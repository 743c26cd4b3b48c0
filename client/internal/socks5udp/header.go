package socks5udp

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Address types (ATYP) of RFC 1928.
const (
	atypIPv4   = 1
	atypDomain = 3
	atypIPv6   = 4
)

// Header sizes.
const (
	// MaxHeaderLen is the longest UDP request header: RSV(2) FRAG(1)
	// ATYP(1), a length byte and a 255-byte name, PORT(2).
	MaxHeaderLen = 4 + 1 + 255 + 2
	// ipv4HeaderLen and ipv6HeaderLen are the headers of IP addresses.
	ipv4HeaderLen = 4 + 4 + 2
	ipv6HeaderLen = 4 + 16 + 2
)

// MaxDatagramSize is the largest datagram (header and payload) a PacketConn
// sends: the largest UDP payload over IPv4.
const MaxDatagramSize = 65507

// header is the part of a datagram before the payload.
type header struct {
	frag byte
	ip   netip.Addr // the address, when it is an IP address
	name []byte     // the address, when it is a name (a view into the datagram)
	port uint16
}

// appendHeader appends the header of a datagram to ip:port, or to
// name:port when ip is not valid, with FRAG 0. An IPv4-mapped IPv6 address
// is sent as IPv6 (ATYP 4): callers unmap what they mean as IPv4.
func appendHeader(b []byte, ip netip.Addr, name string, port uint16) ([]byte, error) {
	b = append(b, 0, 0, 0) // RSV RSV FRAG
	switch {
	case ip.Is4():
		b = append(b, atypIPv4)
		a := ip.As4()
		b = append(b, a[:]...)
	case ip.Is6():
		if ip.Zone() != "" {
			return b, fmt.Errorf("%w: IPv6 zone", ErrAddress)
		}
		b = append(b, atypIPv6)
		a := ip.As16()
		b = append(b, a[:]...)
	default:
		if err := checkName(name); err != nil {
			return b, err
		}
		b = append(b, atypDomain, byte(len(name)))
		b = append(b, name...)
	}
	return binary.BigEndian.AppendUint16(b, port), nil
}

// checkName accepts 1 to 255 bytes of printable ASCII without spaces.
func checkName(name string) error {
	if len(name) == 0 || len(name) > 255 {
		return fmt.Errorf("%w: name of %d bytes", ErrAddress, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("%w: name has a byte %#x", ErrAddress, c)
		}
	}
	return nil
}

// parseHeader decodes the header at the start of b and returns it with its
// length. It fails on a non-zero RSV, an unknown ATYP, an empty name or a
// header longer than b; FRAG is returned for the caller to judge.
func parseHeader(b []byte) (header, int, error) {
	var h header
	if len(b) < 4 {
		return h, 0, fmt.Errorf("%w: %d bytes", errMalformed, len(b))
	}
	if b[0] != 0 || b[1] != 0 {
		return h, 0, fmt.Errorf("%w: RSV not zero", errMalformed)
	}
	h.frag = b[2]
	var n int
	switch b[3] {
	case atypIPv4:
		n = ipv4HeaderLen
		if len(b) < n {
			return h, 0, fmt.Errorf("%w: short IPv4 header", errMalformed)
		}
		h.ip = netip.AddrFrom4([4]byte(b[4:8]))
	case atypIPv6:
		n = ipv6HeaderLen
		if len(b) < n {
			return h, 0, fmt.Errorf("%w: short IPv6 header", errMalformed)
		}
		h.ip = netip.AddrFrom16([16]byte(b[4:20]))
	case atypDomain:
		if len(b) < 5 {
			return h, 0, fmt.Errorf("%w: short name header", errMalformed)
		}
		l := int(b[4])
		n = 5 + l + 2
		if l == 0 || len(b) < n {
			return h, 0, fmt.Errorf("%w: bad name length", errMalformed)
		}
		h.name = b[5 : 5+l]
	default:
		return h, 0, fmt.Errorf("%w: ATYP %d", errMalformed, b[3])
	}
	h.port = binary.BigEndian.Uint16(b[n-2 : n])
	return h, n, nil
}
