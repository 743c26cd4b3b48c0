package wsserver

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gobwas/ws"
)

// Upgrade answers req's opening handshake with gobwas/ws's HTTPUpgrader
// (version 13, no extension or subprotocol negotiated): it hijacks the
// connection, writes the 101 response within timeout and returns a Conn.
// A request that is not a WebSocket opening handshake is answered through
// w, not hijacked (405 for a method other than GET, 426 with
// Sec-WebSocket-Version: 13 for another version, 400 otherwise), so that
// the server finishes and closes it as any refused request, and Upgrade
// returns why. The connection's deadlines are cleared on success.
func Upgrade(w http.ResponseWriter, req *http.Request, pools *Pools, timeout time.Duration) (*Conn, error) {
	// The upgrader checks the request and writes its answer to a
	// connection that is not yet taken: only a handshake it accepts
	// hijacks the real one.
	var answer bytes.Buffer
	_, _, _, err := ws.HTTPUpgrader{}.Upgrade(req, unhijacked{w, &answer})
	if err != nil {
		code := http.StatusBadRequest
		var rej interface{ StatusCode() int }
		if errors.As(err, &rej) && rej.StatusCode() >= 400 {
			code = rej.StatusCode()
		}
		if code == http.StatusUpgradeRequired {
			w.Header().Set("Sec-WebSocket-Version", "13")
		}
		http.Error(w, http.StatusText(code), code)
		return nil, fmt.Errorf("websocket: bad handshake: %w", err)
	}
	nc, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("websocket: hijack: %w", err)
	}
	c := &Conn{conn: nc, raw: underlying(nc), pools: pools, state: ws.StateServerSide}
	// A client may send its first frame right behind the request.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		c.spare = append([]byte(nil), b...)
	}
	if err := nc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := nc.Write(answer.Bytes()); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// unhijacked is the ResponseWriter the upgrader sees: its Hijack takes
// nothing from the server, and gives the upgrader a connection that does
// nothing and a writer into answer.
type unhijacked struct {
	http.ResponseWriter
	answer *bytes.Buffer
}

func (u unhijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return noConn{}, bufio.NewReadWriter(bufio.NewReader(strings.NewReader("")), bufio.NewWriter(u.answer)), nil
}

// noConn is the connection unhijacked gives the upgrader, which only sets
// its deadlines.
type noConn struct{ net.Conn }

func (noConn) SetDeadline(time.Time) error      { return nil }
func (noConn) SetReadDeadline(time.Time) error  { return nil }
func (noConn) SetWriteDeadline(time.Time) error { return nil }
func (noConn) Close() error                     { return nil }

// underlying returns the connection under c's TLS layer, or c.
func underlying(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
