package webrtcnet

import (
	"net"

	"github.com/pion/ice/v4"
	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v5"
)

// LoopbackOnly restricts se to loopback: ICE gathers on the loopback
// interfaces of n only, keeps only loopback addresses, and includes the
// loopback candidates pion leaves out by default; mDNS is off and only
// IPv4 UDP is gathered. WebRTC between peers on one machine, for tests and
// demonstrations, never leaves it. n is the network se uses
// (SettingEngine.SetNet); nil means the host's.
func LoopbackOnly(se *webrtc.SettingEngine, n transport.Net) {
	LoopbackInterfaces(se, n)
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
}

// LoopbackInterfaces is LoopbackOnly without its address filter: tests let
// a loopback address stand for the private address of a host behind a NAT,
// so that a role's own filters and candidate stripping apply as in
// production.
func LoopbackInterfaces(se *webrtc.SettingEngine, n transport.Net) {
	se.SetInterfaceFilter(func(name string) bool { return isLoopbackInterface(n, name) })
	se.SetIncludeLoopbackCandidate(true)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
}

// isLoopbackInterface reports whether n (the host's if nil) flags the
// interface called name as loopback. A network of its own, such as the
// client's SOCKS5 one, names interfaces the host does not have.
func isLoopbackInterface(n transport.Net, name string) bool {
	if n == nil {
		ifi, err := net.InterfaceByName(name)
		return err == nil && ifi.Flags&net.FlagLoopback != 0
	}
	ifi, err := n.InterfaceByName(name)
	return err == nil && ifi.Flags&net.FlagLoopback != 0
}
