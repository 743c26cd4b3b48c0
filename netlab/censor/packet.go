package censor

import (
	"net/netip"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// IP protocol numbers the programs judge.
const (
	protoTCP = 6
	protoUDP = 17
)

// packet is one decoded IP packet; payload points into the caller's buffer.
type packet struct {
	proto    uint8
	src, dst netip.AddrPort
	ipLen    int    // the IP packet's length
	payload  []byte // the UDP or TCP payload
	tcp      *layers.TCP
}

// flowKey is a 5-tuple seen from the client side: both directions of a
// flow map to one key.
type flowKey struct {
	client, server netip.AddrPort
	proto          uint8
}

// key returns p's flow key for a packet going dir.
func (p *packet) key(dir Direction) flowKey {
	if dir == Outbound {
		return flowKey{client: p.src, server: p.dst, proto: p.proto}
	}
	return flowKey{client: p.dst, server: p.src, proto: p.proto}
}

// remote returns the outside end of p.
func (p *packet) remote(dir Direction) netip.Addr {
	if dir == Outbound {
		return p.dst.Addr()
	}
	return p.src.Addr()
}

// decoder decodes packets without allocating once warm; each program owns
// one, as it runs on one goroutine.
type decoder struct {
	ip4 layers.IPv4
	ip6 layers.IPv6
	udp layers.UDP
	tcp layers.TCP
}

// decode decodes pkt's IP header and its UDP or TCP header. It reports
// false for anything else (other protocols, non-first fragments, IPv6
// extension headers, malformed packets).
func (d *decoder) decode(pkt []byte) (packet, bool) {
	var p packet
	if len(pkt) < 1 {
		return p, false
	}
	var (
		l4    []byte
		src   netip.Addr
		dst   netip.Addr
		proto uint8
	)
	switch pkt[0] >> 4 {
	case 4:
		if err := d.ip4.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
			return p, false
		}
		if d.ip4.FragOffset != 0 {
			return p, false
		}
		s, ok1 := netip.AddrFromSlice(d.ip4.SrcIP)
		t, ok2 := netip.AddrFromSlice(d.ip4.DstIP)
		if !ok1 || !ok2 {
			return p, false
		}
		src, dst, proto, l4 = s, t, uint8(d.ip4.Protocol), d.ip4.Payload
		p.ipLen = int(d.ip4.Length)
	case 6:
		if err := d.ip6.DecodeFromBytes(pkt, gopacket.NilDecodeFeedback); err != nil {
			return p, false
		}
		s, ok1 := netip.AddrFromSlice(d.ip6.SrcIP)
		t, ok2 := netip.AddrFromSlice(d.ip6.DstIP)
		if !ok1 || !ok2 {
			return p, false
		}
		src, dst, proto, l4 = s, t, uint8(d.ip6.NextHeader), d.ip6.Payload
		p.ipLen = 40 + len(l4)
	default:
		return p, false
	}
	var sport, dport uint16
	switch proto {
	case protoUDP:
		if err := d.udp.DecodeFromBytes(l4, gopacket.NilDecodeFeedback); err != nil {
			return p, false
		}
		sport, dport, p.payload = uint16(d.udp.SrcPort), uint16(d.udp.DstPort), d.udp.Payload
	case protoTCP:
		if err := d.tcp.DecodeFromBytes(l4, gopacket.NilDecodeFeedback); err != nil {
			return p, false
		}
		sport, dport, p.payload = uint16(d.tcp.SrcPort), uint16(d.tcp.DstPort), d.tcp.Payload
		p.tcp = &d.tcp
	default:
		return p, false
	}
	p.proto = proto
	p.src = netip.AddrPortFrom(src.Unmap(), sport)
	p.dst = netip.AddrPortFrom(dst.Unmap(), dport)
	return p, true
}

// ipProto returns pkt's IP protocol (IPv6: its first next header), without
// decoding more than that.
func ipProto(pkt []byte) (uint8, bool) {
	if len(pkt) < 1 {
		return 0, false
	}
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < 20 {
			return 0, false
		}
		return pkt[9], true
	case 6:
		if len(pkt) < 40 {
			return 0, false
		}
		return pkt[6], true
	}
	return 0, false
}
