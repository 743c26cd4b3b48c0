// Package stuntest is a STUN server for tests. Start listens on 127.0.0.1
// and answers every Binding Request from a loopback address with a chosen
// mapped address (and the request's source port), as a STUN server seen
// from behind a NAT would, so tests can make pion gather server-reflexive
// candidates with a public-looking address without any traffic leaving the
// machine. StartOn listens on a test address (a network namespace's
// peer) and answers with the address each request came from, as a real
// STUN server does. Neither sends anything but answers to requests.
package stuntest

import (
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"
)

// Start starts a server on 127.0.0.1 that maps every loopback requester
// to mapped; it stops when the test ends. It returns the server's URL,
// "stun:127.0.0.1:PORT".
func Start(t testing.TB, mapped netip.Addr) string {
	t.Helper()
	return serve(t, netip.AddrFrom4([4]byte{127, 0, 0, 1}), mapped)
}

// StartOn starts a server on addr (an address of this machine, port
// chosen by the system) that reports to each requester the address its
// request came from; it stops when the test ends. It returns the server's
// URL, "stun:ADDR:PORT".
func StartOn(t testing.TB, addr netip.Addr) string {
	t.Helper()
	return serve(t, addr, netip.Addr{})
}

// serve answers Binding Requests on addr with mapped, or with the source
// address when mapped is the zero Addr; from loopback only unless the
// server listens elsewhere.
func serve(t testing.TB, addr, mapped netip.Addr) string {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { conn.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			if addr.IsLoopback() && !from.Addr().Unmap().IsLoopback() {
				continue
			}
			reported := mapped
			if !reported.IsValid() {
				reported = from.Addr().Unmap()
			}
			req := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if req.Decode() != nil || req.Type != stun.BindingRequest {
				continue
			}
			resp, err := stun.Build(stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess,
				&stun.XORMappedAddress{IP: reported.AsSlice(), Port: int(from.Port())}, stun.Fingerprint)
			if err != nil {
				continue
			}
			_, _ = conn.WriteToUDPAddrPort(resp.Raw, from)
		}
	}()
	return "stun:" + conn.LocalAddr().String()
}
