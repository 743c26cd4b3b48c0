// Package stuntest is a fake STUN server for tests: it listens on
// 127.0.0.1 and answers every Binding Request from a loopback address with
// a chosen mapped address (and the request's source port), as a STUN
// server seen from behind a NAT would. It sends nothing but those answers,
// and only to loopback, so tests can make pion gather server-reflexive
// candidates with a public-looking address without any traffic leaving
// the machine.
package stuntest

import (
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"
)

// Start starts the server; it stops when the test ends. It returns the
// server's URL, "stun:127.0.0.1:PORT".
func Start(t testing.TB, mapped netip.Addr) string {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
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
			if !from.Addr().Unmap().IsLoopback() {
				continue
			}
			req := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if req.Decode() != nil || req.Type != stun.BindingRequest {
				continue
			}
			resp, err := stun.Build(stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess,
				&stun.XORMappedAddress{IP: mapped.AsSlice(), Port: int(from.Port())}, stun.Fingerprint)
			if err != nil {
				continue
			}
			_, _ = conn.WriteToUDPAddrPort(resp.Raw, from)
		}
	}()
	return "stun:" + conn.LocalAddr().String()
}
