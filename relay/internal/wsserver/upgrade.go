package wsserver

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gobwas/ws"
)

// Upgrade answers req's opening handshake (gobwas/ws's HTTPUpgrader:
// version 13, no extension or subprotocol negotiated), writing the 101
// response within timeout on the hijacked connection, and returns a Conn.
// A request that is not a WebSocket opening handshake is refused (405
// for a method other than GET, 426 with Sec-WebSocket-Version: 13 for
// another version, 400 otherwise), its connection closed, and Upgrade
// returns why. The connection's deadlines are cleared on success.
func Upgrade(w http.ResponseWriter, req *http.Request, pools *Pools, timeout time.Duration) (*Conn, error) {
	u := ws.HTTPUpgrader{Timeout: timeout}
	nc, rw, _, err := u.Upgrade(req, hijacker{w})
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	c := &Conn{conn: nc, raw: underlying(nc), pools: pools, state: ws.StateServerSide}
	// A client may send its first frame right behind the request.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		c.spare = append([]byte(nil), b...)
	}
	return c, nil
}

// hijacker gives the upgrader a writer for its response on servers whose
// Hijack gives none (the relay's Serve).
type hijacker struct{ http.ResponseWriter }

func (h hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err == nil && rw.Writer == nil {
		rw.Writer = bufio.NewWriterSize(nc, 256)
	}
	return nc, rw, err
}

// Unwrap lets http.ResponseController reach the server's writer.
func (h hijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// underlying returns the connection under c's TLS layer, or c.
func underlying(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
