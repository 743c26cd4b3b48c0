package socksserver

import (
	"net"
	"slices"
	"sync"
)

// handshakes tracks the SOCKS handshakes in progress, oldest first, so
// that a local program holding every slot with silent connections cannot
// lock out the next honest one.
type handshakes struct {
	max int
	mu  sync.Mutex
	all []*handshake
}

// A handshake is a connection whose SOCKS handshake is in progress.
type handshake struct {
	conn  net.Conn
	spoke bool // it has sent its first byte
}

// admit adds a handshake for c. When all slots are taken it closes the
// oldest connection that has not spoken (its handshake then ends and frees
// the slot), or returns nil if every one has.
func (hs *handshakes) admit(c net.Conn) *handshake {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.all) >= hs.max {
		i := slices.IndexFunc(hs.all, func(h *handshake) bool { return !h.spoke })
		if i < 0 {
			return nil
		}
		_ = hs.all[i].conn.Close()
		hs.all = slices.Delete(hs.all, i, i+1)
	}
	h := &handshake{conn: c}
	hs.all = append(hs.all, h)
	return h
}

// spoke marks h as having sent its first byte: it can no longer be evicted.
func (hs *handshakes) spoke(h *handshake) {
	hs.mu.Lock()
	h.spoke = true
	hs.mu.Unlock()
}

// done frees h's slot (if it was not evicted already).
func (hs *handshakes) done(h *handshake) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if i := slices.Index(hs.all, h); i >= 0 {
		hs.all = slices.Delete(hs.all, i, i+1)
	}
}

// prefixConn is a connection whose first byte has been read already: Read
// returns it before the rest.
type prefixConn struct {
	net.Conn
	first byte
	read  bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.read || len(p) == 0 {
		return c.Conn.Read(p)
	}
	c.read = true
	p[0] = c.first
	return 1, nil
}

// oneConnListener is a net.Listener that yields one connection and then
// fails, so that goptlib's AcceptSocks runs the handshake of a connection
// that is already accepted (its retry after a failed handshake ends there).
type oneConnListener struct{ c net.Conn }

func (l *oneConnListener) Accept() (net.Conn, error) {
	c := l.c
	if c == nil {
		return nil, net.ErrClosed
	}
	l.c = nil
	return c, nil
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return addrOf{} }

// addrOf is the placeholder address of a oneConnListener (goptlib never
// asks for it).
type addrOf struct{}

func (addrOf) Network() string { return "tcp" }
func (addrOf) String() string  { return "socks" }
