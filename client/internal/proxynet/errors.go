package proxynet

import "errors"

var (
	// ErrNotSupported: a network operation that cannot go through a SOCKS5
	// UDP association (TCP, dials); it is refused rather than made
	// around the proxy.
	ErrNotSupported = errors.New("not available through the SOCKS5 proxy")
	// ErrNetwork: a network name other than udp, udp4 or udp6.
	ErrNetwork = errors.New("unsupported network")
	// ErrResolve: a STUN server name the proxy could not resolve (no
	// reply to the Binding Request sent to it in time), or an address of
	// the wrong family.
	ErrResolve = errors.New("cannot resolve through the SOCKS5 proxy")
	// ErrNoInterface: InterfaceByName or InterfaceByIndex for anything but
	// the virtual interface.
	ErrNoInterface = errors.New("no such interface")
)
