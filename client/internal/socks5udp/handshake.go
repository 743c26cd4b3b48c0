package socks5udp

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
)

// SOCKS5 constants (RFC 1928, RFC 1929).
const (
	socksVersion     = 5
	cmdUDPAssociate  = 3
	methodNone       = 0
	methodUserPass   = 2
	methodNoneOK     = 0xff
	userPassVersion  = 1
	replySucceeded   = 0
	maxCredentialLen = 255
)

// replyText names the reply codes of RFC 1928; others are "unknown".
var replyText = [...]string{
	1: "general SOCKS server failure",
	2: "connection not allowed by ruleset",
	3: "network unreachable",
	4: "host unreachable",
	5: "connection refused",
	6: "TTL expired",
	7: "command not supported",
	8: "address type not supported",
}

// replyName returns the text of a reply code, from a fixed set.
func replyName(code byte) string {
	if int(code) < len(replyText) && replyText[code] != "" {
		return replyText[code]
	}
	return "unknown reply code"
}

// greet negotiates the authentication method and authenticates.
func greet(rw io.ReadWriter, user, pass string) error {
	req := []byte{socksVersion, 1, methodNone}
	if user != "" {
		req = []byte{socksVersion, 2, methodNone, methodUserPass}
	}
	if _, err := rw.Write(req); err != nil {
		return fmt.Errorf("send greeting: %w", err)
	}
	var sel [2]byte
	if _, err := io.ReadFull(rw, sel[:]); err != nil {
		return fmt.Errorf("read method selection: %w", err)
	}
	if sel[0] != socksVersion {
		return fmt.Errorf("%w: version %d in method selection", ErrProtocol, sel[0])
	}
	switch {
	case sel[1] == methodNone:
		return nil
	case sel[1] == methodUserPass && user != "":
		msg := make([]byte, 0, 3+len(user)+len(pass))
		msg = append(msg, userPassVersion, byte(len(user)))
		msg = append(msg, user...)
		msg = append(msg, byte(len(pass)))
		msg = append(msg, pass...)
		if _, err := rw.Write(msg); err != nil {
			return fmt.Errorf("send credentials: %w", err)
		}
		var st [2]byte
		if _, err := io.ReadFull(rw, st[:]); err != nil {
			return fmt.Errorf("read authentication status: %w", err)
		}
		if st[1] != 0 {
			return ErrAuthFailed
		}
		return nil
	case sel[1] == methodNoneOK:
		return ErrNoAcceptableAuth
	default:
		return fmt.Errorf("%w: proxy chose method %d, which was not offered", ErrProtocol, sel[1])
	}
}

// requestAssociate sends UDP ASSOCIATE with an all-zero address and reads
// the reply. It returns BND.ADDR (an IP address, or a name when ip is not
// valid) and BND.PORT.
func requestAssociate(rw io.ReadWriter) (ip netip.Addr, name string, port uint16, err error) {
	req := []byte{socksVersion, cmdUDPAssociate, 0, atypIPv4, 0, 0, 0, 0, 0, 0}
	if _, err := rw.Write(req); err != nil {
		return ip, "", 0, fmt.Errorf("send UDP ASSOCIATE: %w", err)
	}
	var head [4]byte // VER REP RSV ATYP
	if _, err := io.ReadFull(rw, head[:]); err != nil {
		return ip, "", 0, fmt.Errorf("read reply: %w", err)
	}
	if head[0] != socksVersion {
		return ip, "", 0, fmt.Errorf("%w: version %d in reply", ErrProtocol, head[0])
	}
	if head[1] != replySucceeded {
		return ip, "", 0, fmt.Errorf("%w: %s (code %d)", ErrRequestFailed, replyName(head[1]), head[1])
	}
	var buf [255 + 2]byte
	switch head[3] {
	case atypIPv4:
		if _, err := io.ReadFull(rw, buf[:4+2]); err != nil {
			return ip, "", 0, fmt.Errorf("read reply: %w", err)
		}
		ip = netip.AddrFrom4([4]byte(buf[:4]))
		port = binary.BigEndian.Uint16(buf[4:6])
	case atypIPv6:
		if _, err := io.ReadFull(rw, buf[:16+2]); err != nil {
			return ip, "", 0, fmt.Errorf("read reply: %w", err)
		}
		ip = netip.AddrFrom16([16]byte(buf[:16]))
		port = binary.BigEndian.Uint16(buf[16:18])
	case atypDomain:
		if _, err := io.ReadFull(rw, buf[:1]); err != nil {
			return ip, "", 0, fmt.Errorf("read reply: %w", err)
		}
		l := int(buf[0])
		if _, err := io.ReadFull(rw, buf[:l+2]); err != nil {
			return ip, "", 0, fmt.Errorf("read reply: %w", err)
		}
		name = string(buf[:l])
		if err := checkName(name); err != nil {
			return ip, "", 0, fmt.Errorf("%w: relay name: %w", ErrProtocol, err)
		}
		port = binary.BigEndian.Uint16(buf[l : l+2])
	default:
		return ip, "", 0, fmt.Errorf("%w: ATYP %d in reply", ErrProtocol, head[3])
	}
	if port == 0 {
		return ip, "", 0, fmt.Errorf("%w: relay port 0", ErrProtocol)
	}
	return ip, name, port, nil
}

// relayAddr turns BND.ADDR:BND.PORT into the address to send datagrams to:
// an unspecified address means the proxy's own (the control connection's
// remote address), as most proxies mean it.
func relayAddr(ip netip.Addr, port uint16, control net.Conn) (netip.AddrPort, error) {
	ip = ip.Unmap()
	if ip.IsUnspecified() {
		remote, ok := control.RemoteAddr().(*net.TCPAddr)
		if !ok {
			return netip.AddrPort{}, fmt.Errorf("%w: unspecified relay address and no proxy IP address", ErrProtocol)
		}
		ip = remote.AddrPort().Addr().Unmap()
	}
	return netip.AddrPortFrom(ip, port), nil
}
