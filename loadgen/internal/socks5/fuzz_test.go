package socks5

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"
)

// scriptedConn is a net.Conn whose reads come from a fixed script and whose
// writes are discarded: a SOCKS5 server that says whatever the fuzzer wants.
type scriptedConn struct{ r *bytes.Reader }

func (c scriptedConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c scriptedConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c scriptedConn) Close() error                     { return nil }
func (c scriptedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c scriptedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c scriptedConn) SetWriteDeadline(time.Time) error { return nil }

// FuzzSOCKSReply feeds arbitrary proxy replies to the SOCKS5 client
// handshake: it must return (an ErrSOCKS error, or success for a valid
// reply) and never panic or hang.
func FuzzSOCKSReply(f *testing.F) {
	f.Add([]byte{5, 0, 5, 0, 0, 1, 127, 0, 0, 1, 0, 80}, false)               // no auth, IPv4 bound address
	f.Add([]byte{5, 2, 1, 0, 5, 0, 0, 3, 4, 'h', 'o', 's', 't', 0, 80}, true) // user/pass, domain bound address
	f.Add([]byte{5, 0, 5, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80}, false)
	f.Add([]byte{5, 0, 5, 5, 0, 1}, false) // connection refused
	f.Add([]byte{5, 0xff}, false)          // no acceptable method
	f.Add([]byte{4, 0}, false)
	f.Fuzz(func(t *testing.T, script []byte, auth bool) {
		d := &Dialer{}
		if auth {
			d.User, d.Password = "u", "p"
		}
		err := d.handshake(scriptedConn{bytes.NewReader(script)}, "127.0.0.1", 9000)
		if err != nil && !errors.Is(err, ErrSOCKS) {
			t.Fatalf("error %v does not match ErrSOCKS", err)
		}
	})
}
