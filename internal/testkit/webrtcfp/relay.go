// Package webrtcfp captures what a censor sees of a WebRTC connection
// between two peers on loopback, for tests that compare Flurry's peers with
// a real browser's: a UDP relay between the peers records every datagram,
// and Features extracts the fields censors fingerprint from the STUN
// binding requests and the DTLS handshake messages sent in clear (record
// and handshake versions, cipher suites, extensions and their contents,
// cookie exchange, STUN attributes).
//
// The peers learn each other's address only from the session descriptions,
// so Relay.Rewrite, applied to the offer and the answer, points each peer at
// the relay: every packet goes through it. Only loopback candidates are
// kept, and the relay forwards only packets from the peers' own addresses.
package webrtcfp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Side names a peer: the offerer or the answerer.
type Side int

// The two peers.
const (
	Offerer Side = iota
	Answerer
)

func (s Side) String() string {
	if s == Offerer {
		return "offerer"
	}
	return "answerer"
}

// Datagram is one UDP payload a peer sent.
type Datagram struct {
	From Side
	Data []byte
}

// Relay forwards UDP between two peers and records what each sends.
type Relay struct {
	addr netip.Addr // the peers' candidate address kept by Rewrite
	// to[s] is the socket the other peer sends to in order to reach s;
	// packets for s leave from the other socket.
	to   [2]*net.UDPConn
	mu   sync.Mutex
	peer [2]netip.AddrPort // the real address of each side
	log  []Datagram
	wg   sync.WaitGroup
}

// maxDatagram is the largest datagram relayed.
const maxDatagram = 64 << 10

// maxLog bounds the datagrams recorded (the handshake takes a few dozen).
const maxLog = 4096

// NewRelay starts a relay for peers on 127.0.0.1, listening there; it
// stops when the test ends.
func NewRelay(t testing.TB) *Relay {
	t.Helper()
	lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	return newRelay(t, lo, func() (*net.UDPConn, error) {
		return net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(lo, 0)))
	})
}

// NewNetnsRelay starts a relay for peers on n.HostAddr, listening on
// n.NSAddr inside the namespace; it stops when the test ends.
func NewNetnsRelay(t testing.TB, n *Netns) *Relay {
	t.Helper()
	return newRelay(t, n.HostAddr, n.ListenUDP)
}

func newRelay(t testing.TB, peers netip.Addr, listen func() (*net.UDPConn, error)) *Relay {
	t.Helper()
	r := &Relay{addr: peers}
	for i := range r.to {
		c, err := listen()
		if err != nil {
			t.Fatal(err)
		}
		r.to[i] = c
	}
	for s := range r.to {
		r.wg.Add(1)
		go r.forward(Side(s))
	}
	t.Cleanup(func() {
		for _, c := range r.to {
			_ = c.Close()
		}
		r.wg.Wait()
	})
	return r
}

// forward relays what arrives for dst: it comes from the other side and
// leaves from the socket that side is known by to dst.
func (r *Relay) forward(dst Side) {
	defer r.wg.Done()
	src := 1 - dst
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := r.to[dst].ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		r.mu.Lock()
		ok := r.peer[src].IsValid() && from == r.peer[src] && r.peer[dst].IsValid()
		to := r.peer[dst]
		if ok && len(r.log) < maxLog {
			r.log = append(r.log, Datagram{From: src, Data: append([]byte(nil), buf[:n]...)})
		}
		r.mu.Unlock()
		if ok {
			_, _ = r.to[src].WriteToUDPAddrPort(buf[:n], to)
		}
	}
}

// Datagrams returns what was recorded so far.
func (r *Relay) Datagrams() []Datagram {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Datagram(nil), r.log...)
}

// errNoCandidate: a session description without a UDP host candidate on
// the relay's peer address.
var errNoCandidate = errors.New("no UDP host candidate on the relay's peer address")

// Rewrite returns sdp, the session description side sent (plain SDP text),
// with its first UDP host candidate on the peer address (127.0.0.1 or the
// namespace's HostAddr) pointed at the relay and every other candidate
// removed, and records the peer's address.
func (r *Relay) Rewrite(side Side, sdp string) (string, error) {
	eol := "\r\n"
	if !strings.Contains(sdp, eol) {
		eol = "\n"
	}
	var out []string
	found := false
	for _, line := range strings.Split(sdp, eol) {
		rest, isCand := strings.CutPrefix(line, "a=candidate:")
		if !isCand {
			out = append(out, line)
			continue
		}
		f := strings.Fields(rest)
		if found || len(f) < 8 || !strings.EqualFold(f[2], "udp") || f[6] != "typ" || f[7] != "host" {
			continue
		}
		addr, err := netip.ParseAddr(f[4])
		port, perr := strconv.ParseUint(f[5], 10, 16)
		if err != nil || perr != nil || addr != r.addr {
			continue
		}
		found = true
		r.mu.Lock()
		r.peer[side] = netip.AddrPortFrom(addr, uint16(port))
		r.mu.Unlock()
		// The other side reaches this one at r.to[side].
		relay := r.to[side].LocalAddr().(*net.UDPAddr).AddrPort()
		f[4], f[5] = relay.Addr().Unmap().String(), strconv.Itoa(int(relay.Port()))
		out = append(out, "a=candidate:"+strings.Join(f, " "))
	}
	if !found {
		return "", fmt.Errorf("%v: %w", side, errNoCandidate)
	}
	return strings.Join(out, eol), nil
}
