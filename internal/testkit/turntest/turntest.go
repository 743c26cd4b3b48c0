// Package turntest is a TURN server for tests (github.com/pion/turn): it
// listens on TCP on an address of this machine (loopback, or a test
// namespace's veth peer), relays from that same address, and relays only
// to that address and to loopback, so nothing it sends leaves the machine
// or the test's namespaces.
package turntest

import (
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pion/transport/v5"
	"github.com/pion/turn/v5"
)

// Server is a running TURN server.
type Server struct {
	// URL is the ice option for a client: turn:user:pass@addr:port?transport=tcp.
	URL string
	// Allocations counts the relay allocations made so far.
	allocations atomic.Int64
}

// Allocations returns how many relay allocations clients have made.
func (s *Server) Allocations() int64 { return s.allocations.Load() }

const realm = "flurry.test"

// Start starts a TURN server on addr (TCP, port chosen by the system) that
// accepts user and password; it stops when the test ends.
func Start(t testing.TB, addr netip.Addr, user, password string) *Server {
	t.Helper()
	return StartNet(t, addr, user, password, nil)
}

// StartNet is Start with the network its relay sockets are opened on
// (nil: the process's own). The server opens them while it runs, so a
// test whose server listens in another network namespace passes a Net
// that opens them there too.
func StartNet(t testing.TB, addr netip.Addr, user, password string, relayNet transport.Net) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{}
	key := turn.GenerateAuthKey(user, realm, password)
	srv, err := turn.NewServer(turn.ServerConfig{
		Realm: realm,
		AuthHandler: func(ra *turn.RequestAttributes) (string, []byte, bool) {
			if ra.Username != user {
				return "", nil, false
			}
			return user, key, true
		},
		EventHandler: turn.EventHandler{
			OnAllocationCreated: func(net.Addr, net.Addr, string, string, string, net.Addr, int) {
				s.allocations.Add(1)
			},
		},
		ListenerConfigs: []turn.ListenerConfig{{
			Listener: ln,
			RelayAddressGenerator: &turn.RelayAddressGeneratorStatic{
				RelayAddress: net.IP(addr.AsSlice()),
				Address:      addr.String(),
				Net:          relayNet,
			},
			PermissionHandler: func(_ net.Addr, peer net.IP) bool {
				p, ok := netip.AddrFromSlice(peer)
				return ok && (p.Unmap() == addr || p.Unmap().IsLoopback())
			},
		}},
	})
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	esc := strings.NewReplacer("%", "%25", ":", "%3A", "@", "%40", ",", "%2C").Replace
	s.URL = "turn:" + esc(user) + ":" + esc(password) + "@" + ln.Addr().String() + "?transport=tcp"
	return s
}
