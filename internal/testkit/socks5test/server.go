package socks5test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Server. The zero value works: no authentication,
// CONNECT and UDP ASSOCIATE allowed.
type Config struct {
	// Username and Password, when Username is set, are required (RFC
	// 1929); clients that do not offer username/password get "no
	// acceptable methods".
	Username, Password string

	// RefuseUDP answers UDP ASSOCIATE with "command not supported", as
	// proxies without UDP support do.
	RefuseUDP bool

	// UnspecifiedBindAddr answers UDP ASSOCIATE with BND.ADDR 0.0.0.0
	// (meaning "the proxy's own address") instead of 127.0.0.1.
	UnspecifiedBindAddr bool
}

// Stats counts what a Server did.
type Stats struct {
	Connects     int64 // CONNECT requests relayed
	Associations int64 // UDP associations made
	DatagramsOut int64 // datagrams from clients sent on to their destination (counted before the send)
	DatagramsIn  int64 // datagrams wrapped and sent to clients (counted before the send)
	Refused      int64 // requests and datagrams refused (bad authentication, non-loopback or malformed destination)
	Early        int64 // datagrams from others that arrived before the client's first, dropped
}

// Server is a running SOCKS5 proxy.
type Server struct {
	cfg Config
	ln  net.Listener
	wg  sync.WaitGroup

	connects, associations, out, in, refused, early atomic.Int64

	mu       sync.Mutex // guards the fields below
	closed   bool
	conns    map[net.Conn]struct{}     // every open TCP connection
	controls map[net.Conn]*association // control connections of associations
	changed  chan struct{}             // closed and replaced when controls changes
}

// association is one UDP association's relay socket and its client.
type association struct {
	udp    *net.UDPConn
	mu     sync.Mutex
	client *net.UDPAddr // guarded by mu; learnt from the first datagram
}

// New starts a Server on 127.0.0.1:0.
func New(cfg Config) (*Server, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		ln:       ln,
		conns:    make(map[net.Conn]struct{}),
		controls: make(map[net.Conn]*association),
		changed:  make(chan struct{}),
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Addr returns the server's host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns socks5://[user:pass@]host:port.
func (s *Server) URL() string {
	u := url.URL{Scheme: "socks5", Host: s.Addr()}
	if s.cfg.Username != "" {
		u.User = url.UserPassword(s.cfg.Username, s.cfg.Password)
	}
	return u.String()
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Connects:     s.connects.Load(),
		Associations: s.associations.Load(),
		DatagramsOut: s.out.Load(),
		DatagramsIn:  s.in.Load(),
		Refused:      s.refused.Load(),
		Early:        s.early.Load(),
	}
}

// EndAssociations closes the control connection of every UDP association,
// which ends them (as a proxy that restarts would).
func (s *Server) EndAssociations() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.controls {
		_ = c.Close()
	}
}

// notifyLocked wakes WaitAssociations; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitAssociations waits until exactly n UDP associations are open (their
// control connections not yet closed), or ctx ends.
func (s *Server) WaitAssociations(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		count, changed := len(s.controls), s.changed
		s.mu.Unlock()
		if count == n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%d associations open, want %d: %w", count, n, ctx.Err())
		}
	}
}

// InjectToClients sends raw as a datagram from every association's relay
// socket to its client (once the client is known), and returns to how many.
// Tests use it to send malformed datagrams.
func (s *Server) InjectToClients(raw []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.controls {
		a.mu.Lock()
		client := a.client
		a.mu.Unlock()
		if client != nil {
			if _, err := a.udp.WriteToUDP(raw, client); err == nil {
				n++
			}
		}
	}
	return n
}

// Close stops the server, closes every connection and association and
// waits for its goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	_ = s.ln.Close()
	s.wg.Wait()
}

// track registers c for Close; false when the server is closed.
func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if _, ok := s.controls[c]; ok {
		delete(s.controls, c)
		s.notifyLocked()
	}
	s.mu.Unlock()
	_ = c.Close()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if !s.track(c) {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(c)
			s.serve(c)
		}()
	}
}

// handshakeTimeout bounds the greeting and request of a connection.
const handshakeTimeout = 10 * time.Second

// serve runs one SOCKS5 connection.
func (s *Server) serve(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if !s.authenticate(c) {
		s.refused.Add(1)
		return
	}
	var req [4]byte // VER CMD RSV ATYP
	if _, err := io.ReadFull(c, req[:]); err != nil || req[0] != 5 {
		return
	}
	dst, ok := readAddr(c, req[3])
	if !ok {
		_ = reply(c, 8, netip.AddrPort{})
		return
	}
	_ = c.SetDeadline(time.Time{})
	switch req[1] {
	case 1:
		s.connect(c, dst)
	case 3:
		if s.cfg.RefuseUDP {
			s.refused.Add(1)
			_ = reply(c, 7, netip.AddrPort{})
			return
		}
		s.associate(c)
	default:
		_ = reply(c, 7, netip.AddrPort{})
	}
}

// authenticate runs method selection and, if configured, RFC 1929.
func (s *Server) authenticate(c net.Conn) bool {
	var head [2]byte
	if _, err := io.ReadFull(c, head[:]); err != nil || head[0] != 5 {
		return false
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return false
	}
	want := byte(0)
	if s.cfg.Username != "" {
		want = 2
	}
	offered := false
	for _, m := range methods {
		offered = offered || m == want
	}
	if !offered {
		_, _ = c.Write([]byte{5, 0xff})
		return false
	}
	if _, err := c.Write([]byte{5, want}); err != nil {
		return false
	}
	if want == 0 {
		return true
	}
	var ver [2]byte // VER ULEN
	if _, err := io.ReadFull(c, ver[:]); err != nil || ver[0] != 1 {
		return false
	}
	user := make([]byte, ver[1])
	if _, err := io.ReadFull(c, user); err != nil {
		return false
	}
	var plen [1]byte
	if _, err := io.ReadFull(c, plen[:]); err != nil {
		return false
	}
	pass := make([]byte, plen[0])
	if _, err := io.ReadFull(c, pass); err != nil {
		return false
	}
	if string(user) != s.cfg.Username || string(pass) != s.cfg.Password {
		_, _ = c.Write([]byte{1, 1})
		return false
	}
	_, err := c.Write([]byte{1, 0})
	return err == nil
}

// target is an address from a request or datagram header.
type target struct {
	ip   netip.Addr
	name string
	port uint16
}

// resolve returns the loopback address of t, or false. The only name it
// knows is "localhost" (127.0.0.1): it never asks a resolver, so a test
// cannot send DNS queries off the host through it.
func resolve(t target) (netip.AddrPort, bool) {
	ip := t.ip
	if !ip.IsValid() {
		if !strings.EqualFold(t.name, "localhost") {
			return netip.AddrPort{}, false
		}
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	}
	ip = ip.Unmap()
	if !ip.IsLoopback() {
		return netip.AddrPort{}, false
	}
	return netip.AddrPortFrom(ip, t.port), true
}

// readAddr reads ADDR and PORT of a request with address type atyp.
func readAddr(r io.Reader, atyp byte) (target, bool) {
	var t target
	var buf [256]byte
	switch atyp {
	case 1:
		if _, err := io.ReadFull(r, buf[:4]); err != nil {
			return t, false
		}
		t.ip = netip.AddrFrom4([4]byte(buf[:4]))
	case 4:
		if _, err := io.ReadFull(r, buf[:16]); err != nil {
			return t, false
		}
		t.ip = netip.AddrFrom16([16]byte(buf[:16]))
	case 3:
		if _, err := io.ReadFull(r, buf[:1]); err != nil || buf[0] == 0 {
			return t, false
		}
		l := int(buf[0])
		if _, err := io.ReadFull(r, buf[:l]); err != nil {
			return t, false
		}
		t.name = string(buf[:l])
	default:
		return t, false
	}
	if _, err := io.ReadFull(r, buf[:2]); err != nil {
		return t, false
	}
	t.port = binary.BigEndian.Uint16(buf[:2])
	return t, true
}

// reply writes a reply with code rep and bound address bnd (IPv4).
func reply(w io.Writer, rep byte, bnd netip.AddrPort) error {
	msg := []byte{5, rep, 0, 1, 0, 0, 0, 0, 0, 0}
	if bnd.Addr().Is4() {
		a := bnd.Addr().As4()
		copy(msg[4:8], a[:])
	}
	binary.BigEndian.PutUint16(msg[8:], bnd.Port())
	_, err := w.Write(msg)
	return err
}

// connect relays a CONNECT to a loopback destination.
func (s *Server) connect(c net.Conn, dst target) {
	addr, ok := resolve(dst)
	if !ok {
		s.refused.Add(1)
		_ = reply(c, 2, netip.AddrPort{})
		return
	}
	d := net.Dialer{Timeout: handshakeTimeout}
	up, err := d.Dial("tcp", addr.String())
	if err != nil {
		_ = reply(c, 5, netip.AddrPort{})
		return
	}
	if !s.track(up) {
		return
	}
	defer s.untrack(up)
	if err := reply(c, 0, up.LocalAddr().(*net.TCPAddr).AddrPort()); err != nil {
		return
	}
	s.connects.Add(1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, c)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, up)
	_ = c.Close()
	_ = up.Close()
	<-done
}

// associate runs a UDP association until its control connection closes.
func (s *Server) associate(c net.Conn) {
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		_ = reply(c, 1, netip.AddrPort{})
		return
	}
	a := &association{udp: udp}
	bnd := udp.LocalAddr().(*net.UDPAddr).AddrPort()
	if s.cfg.UnspecifiedBindAddr {
		bnd = netip.AddrPortFrom(netip.IPv4Unspecified(), bnd.Port())
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = udp.Close()
		return
	}
	s.controls[c] = a
	s.notifyLocked()
	s.mu.Unlock()
	if err := reply(c, 0, bnd); err != nil {
		_ = udp.Close()
		return
	}
	s.associations.Add(1)
	controlIP := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.relay(a, controlIP)
	}()
	// The association lasts as long as the control connection.
	_, _ = io.Copy(io.Discard, c)
	_ = udp.Close()
	<-done
}

// relay moves the datagrams of one association.
func (s *Server) relay(a *association, controlIP netip.Addr) {
	buf := make([]byte, 65535)
	for {
		n, from, err := a.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		a.mu.Lock()
		client := a.client
		a.mu.Unlock()
		isClient := client != nil && client.AddrPort() == from
		if client == nil && from.Addr() == controlIP {
			if _, _, ok := parseDatagram(buf[:n]); ok {
				a.mu.Lock()
				a.client = net.UDPAddrFromAddrPort(from)
				a.mu.Unlock()
				isClient = true
			}
		}
		if isClient {
			dst, payload, ok := parseDatagram(buf[:n])
			if !ok {
				s.refused.Add(1)
				continue
			}
			addr, ok := resolve(dst)
			if !ok {
				s.refused.Add(1)
				continue
			}
			s.out.Add(1) // counted before the send, so a reply is never seen first
			_, _ = a.udp.WriteToUDPAddrPort(payload, addr)
			continue
		}
		a.mu.Lock()
		client = a.client
		a.mu.Unlock()
		if client == nil {
			s.early.Add(1) // from elsewhere before the client spoke
			continue
		}
		msg := wrapDatagram(from, buf[:n])
		s.in.Add(1)
		_, _ = a.udp.WriteToUDP(msg, client)
	}
}

// parseDatagram splits a client datagram into destination and payload; it
// refuses non-zero RSV or FRAG and unknown address types.
func parseDatagram(b []byte) (target, []byte, bool) {
	if len(b) < 4 || b[0] != 0 || b[1] != 0 || b[2] != 0 {
		return target{}, nil, false
	}
	r := &sliceReader{b: b[4:]}
	t, ok := readAddr(r, b[3])
	if !ok {
		return target{}, nil, false
	}
	return t, r.b, true
}

// wrapDatagram prefixes payload with the header for source from.
func wrapDatagram(from netip.AddrPort, payload []byte) []byte {
	ip := from.Addr()
	msg := make([]byte, 0, 22+len(payload))
	msg = append(msg, 0, 0, 0)
	if ip.Is4() {
		a := ip.As4()
		msg = append(msg, 1)
		msg = append(msg, a[:]...)
	} else {
		a := ip.As16()
		msg = append(msg, 4)
		msg = append(msg, a[:]...)
	}
	msg = binary.BigEndian.AppendUint16(msg, from.Port())
	return append(msg, payload...)
}

// sliceReader reads from a byte slice, keeping the rest in b.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
