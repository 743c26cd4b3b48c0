package wsserver

import (
	"crypto/sha1" // #nosec G505 -- RFC 6455 fixes SHA-1 for Sec-WebSocket-Accept; it authenticates nothing.
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// acceptGUID is RFC 6455's magic string for Sec-WebSocket-Accept.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Upgrade checks that req opens a WebSocket (version 13, no extension or
// subprotocol negotiated), hijacks its connection and writes the 101
// response within timeout. On failure it has answered with an HTTP error
// (as gorilla does: 405 for a method other than GET, 400 otherwise) and
// returns why. The connection's deadlines are cleared on success.
func Upgrade(w http.ResponseWriter, req *http.Request, pools *Pools, timeout time.Duration) (*Conn, error) {
	if reason, code := checkHandshake(req); reason != "" {
		if code == http.StatusBadRequest && req.Header.Get("Sec-WebSocket-Version") != "13" {
			w.Header().Set("Sec-WebSocket-Version", "13")
		}
		http.Error(w, http.StatusText(code), code)
		return nil, fmt.Errorf("%w: %s", ErrHandshake, reason)
	}
	h, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
		return nil, fmt.Errorf("%w: response writer cannot hijack", ErrHandshake)
	}
	nc, brw, err := h.Hijack()
	if err != nil {
		return nil, fmt.Errorf("%w: hijack: %w", ErrHandshake, err)
	}
	c := &Conn{conn: nc, raw: underlying(nc), pools: pools}
	// A client may send its first frame right behind the request.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		c.spare = append([]byte(nil), b...)
	}
	var resp [160]byte
	out := append(resp[:0], "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "...)
	out = appendAccept(out, req.Header.Get("Sec-WebSocket-Key"))
	out = append(out, "\r\n\r\n"...)
	if err := nc.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		nc.Close()
		return nil, err
	}
	if _, err := nc.Write(out); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// checkHandshake returns why req is not a WebSocket opening handshake and
// the status to answer with, or "".
func checkHandshake(req *http.Request) (string, int) {
	switch {
	case req.Method != http.MethodGet:
		return "method is not GET", http.StatusMethodNotAllowed
	case !hasToken(req.Header, "Connection", "upgrade"):
		return "no Connection: upgrade", http.StatusBadRequest
	case !hasToken(req.Header, "Upgrade", "websocket"):
		return "no Upgrade: websocket", http.StatusBadRequest
	case req.Header.Get("Sec-WebSocket-Version") != "13":
		return "unsupported version", http.StatusBadRequest
	case !validKey(req.Header.Get("Sec-WebSocket-Key")):
		return "bad Sec-WebSocket-Key", http.StatusBadRequest
	}
	return "", 0
}

// hasToken reports whether the comma-separated lists of header name hold
// token (case-insensitively).
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for v != "" {
			var t string
			t, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// validKey reports whether key is 16 bytes in base64, as RFC 6455 requires.
func validKey(key string) bool {
	if len(key) != 24 {
		return false
	}
	var b [18]byte
	n, err := base64.StdEncoding.Decode(b[:], []byte(key))
	return err == nil && n == 16
}

func appendAccept(dst []byte, key string) []byte {
	h := sha1.New() // #nosec G401 -- see the import
	h.Write([]byte(key))
	h.Write([]byte(acceptGUID))
	var sum [sha1.Size]byte
	return base64.StdEncoding.AppendEncode(dst, h.Sum(sum[:0]))
}

// underlying returns the connection under c's TLS layer, or c.
func underlying(c net.Conn) net.Conn {
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c
}
