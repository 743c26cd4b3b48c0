package brokerwire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// DefaultRequestTimeout bounds every HTTP request to a broker.
const DefaultRequestTimeout = 30 * time.Second

// HTTPErrorText describes a failed request: its error, or else its
// unexpected status.
func HTTPErrorText(what string, status int, err error) string {
	if err != nil {
		return what + ": " + err.Error()
	}
	return fmt.Sprintf("%s: HTTP status %d", what, status)
}

// The broker mode's HTTP client. Each simulated proxy and client owns one
// keep-alive HTTP/1.1 connection (as a real one would) and speaks HTTP/1.1
// on it directly: a request is one write of a prepared head and body, a
// response is read with one bufio.Reader into a reused buffer. No goroutine
// per connection, no header maps, no per-request contexts or timers beyond
// one deadline: net/http's client costs several times as much CPU per
// request, which on a shared machine is taken from the broker under test.
//
// Responses may have a Content-Length, be chunked or end with the
// connection; "Connection: close" and HTTP/1.0 responses close it. A request
// on a reused connection that the broker had closed meanwhile (nothing of a
// response read) is sent again once on a new connection, as net/http does.

// errResponse reports a malformed HTTP response.
var errResponse = errors.New("malformed HTTP response")

// H1Client holds what every connection to one broker shares.
type H1Client struct {
	Addr    string      // host:port to dial
	host    string      // Host header value
	tls     *tls.Config // nil: plain HTTP
	Dialer  *net.Dialer
	timeout time.Duration // per request, 0 = none
}

// NewH1Client returns a client for the http or https base URL u (already
// checked by parseURL).
func NewH1Client(u *url.URL, timeout time.Duration, insecure, allow bool) *H1Client {
	c := &H1Client{host: u.Host, Dialer: measure.NewDialer(allow), timeout: timeout, Addr: u.Host}
	port := u.Port()
	if u.Scheme == "https" {
		// #nosec G402 -- only with -insecure, for self-signed test servers.
		c.tls = &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
		if port == "" {
			port = "443"
		}
	} else if port == "" {
		port = "80"
	}
	c.Addr = net.JoinHostPort(u.Hostname(), port)
	return c
}

// H1Conn is one simulated peer's connection, used by one goroutine at a
// time, redialled when needed. Requests end when ctx (fixed for the
// connection's life) does.
type H1Conn struct {
	c     *H1Client
	ctx   context.Context
	local netip.Addr // source address to dial from; zero: the system's choice
	conn  net.Conn
	br    *bufio.Reader
	stop  func() bool // unregisters the context.AfterFunc of conn
	req   []byte      // request being written
	body  []byte      // last response body
}

// Conn returns a keep-alive connection to the client's broker, dialed on
// first use and bounded by ctx.
func (c *H1Client) Conn(ctx context.Context) *H1Conn { return &H1Conn{c: c, ctx: ctx} }

// ConnFrom is conn for a connection from the source address local (for
// example one of 127.0.0.0/8, so that a broker sees many peers).
func (c *H1Client) ConnFrom(ctx context.Context, local netip.Addr) *H1Conn {
	return &H1Conn{c: c, ctx: ctx, local: local}
}

// Close closes the connection, if open.
func (h *H1Conn) Close() {
	if h.conn != nil {
		h.stop()
		h.conn.Close()
		h.conn = nil
	}
}

func (h *H1Conn) dial() error {
	d := h.c.Dialer
	if h.local.IsValid() {
		withLocal := *d
		withLocal.LocalAddr = &net.TCPAddr{IP: h.local.AsSlice()}
		d = &withLocal
	}
	conn, err := d.DialContext(h.ctx, "tcp", h.c.Addr)
	if err != nil {
		return err
	}
	if h.c.tls != nil {
		tc := tls.Client(conn, h.c.tls)
		if err := tc.HandshakeContext(h.ctx); err != nil {
			conn.Close()
			return err
		}
		conn = tc
	}
	h.conn = conn
	// Ending ctx interrupts a request in flight.
	h.stop = context.AfterFunc(h.ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	if h.br == nil {
		h.br = bufio.NewReaderSize(conn, 4096)
	} else {
		h.br.Reset(conn)
	}
	return nil
}

// Post sends body to path and returns the status and the response body (at
// most limit bytes), which stays valid until the next call. written, if
// not nil, is called once the request is on the wire.
func (h *H1Conn) Post(path string, body []byte, limit int, written func()) (int, []byte, error) {
	return h.do("POST", path, body, limit, written)
}

// Get is post for a GET request (no body).
func (h *H1Conn) Get(path string, limit int) (int, []byte, error) {
	return h.do("GET", path, nil, limit, nil)
}

// do sends a request; see post.
func (h *H1Conn) do(method, path string, body []byte, limit int, written func()) (int, []byte, error) {
	for attempt := 0; ; attempt++ {
		reused := h.conn != nil
		if !reused {
			if err := h.dial(); err != nil {
				return 0, nil, err
			}
		}
		status, resp, err := h.roundTrip(method, path, body, limit, written)
		if err == nil {
			return status, resp, nil
		}
		h.Close()
		if ctxErr := h.ctx.Err(); ctxErr != nil {
			return 0, nil, ctxErr
		}
		var stale *staleConnError
		if !reused || attempt > 0 || !errors.As(err, &stale) {
			return 0, nil, err
		}
	}
}

// staleConnError wraps an error that came before any byte of a response
// on a reused connection: the broker had closed it.
type staleConnError struct{ err error }

// stale wraps err in a staleConnError if it says the peer had closed the
// connection (not a timeout).
func stale(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return &staleConnError{err}
	}
	return err
}

func (e *staleConnError) Error() string { return e.err.Error() }

func (e *staleConnError) Unwrap() error { return e.err }

func (h *H1Conn) roundTrip(method, path string, body []byte, limit int, written func()) (int, []byte, error) {
	if h.c.timeout > 0 {
		_ = h.conn.SetDeadline(time.Now().Add(h.c.timeout))
	} else {
		_ = h.conn.SetDeadline(time.Time{})
	}
	if err := h.ctx.Err(); err != nil { // before SetDeadline could undo the AfterFunc's
		return 0, nil, err
	}
	req := append(append(h.req[:0], method...), ' ')
	req = append(req, path...)
	req = append(req, " HTTP/1.1\r\nHost: "...)
	req = append(req, h.c.host...)
	req = append(req, "\r\nUser-Agent: flurry-loadgen\r\nContent-Length: "...)
	req = strconv.AppendInt(req, int64(len(body)), 10)
	req = append(req, "\r\n\r\n"...)
	req = append(req, body...)
	h.req = req
	if _, err := h.conn.Write(req); err != nil {
		return 0, nil, stale(err)
	}
	if written != nil {
		written()
	}
	return h.readResponse(limit)
}

// readResponse reads one response, skipping 1xx ones.
func (h *H1Conn) readResponse(limit int) (int, []byte, error) {
	br := h.br
	if _, err := br.Peek(1); err != nil {
		return 0, nil, stale(err)
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		// "HTTP/1.x NNN reason"
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return 0, nil, errResponse
		}
		status, ok := parseDecimal(line[9:12])
		if !ok || status < 100 {
			return 0, nil, errResponse
		}
		keepAlive := line[7] == '1'
		length, chunked := -1, false
		for {
			line, err = br.ReadSlice('\n')
			if err != nil {
				return 0, nil, err
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) == 0 {
				break
			}
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok {
				return 0, nil, errResponse
			}
			value = bytes.TrimSpace(value)
			switch {
			case equalFold(name, "Content-Length"):
				n, ok := parseDecimal(value)
				if !ok {
					return 0, nil, errResponse
				}
				length = n
			case equalFold(name, "Transfer-Encoding"):
				chunked = equalFold(value, "chunked")
			case equalFold(name, "Connection"):
				keepAlive = keepAlive && !equalFold(value, "close")
			}
		}
		if status < 200 {
			continue
		}
		h.body = h.body[:0]
		switch {
		case chunked:
			err = h.readChunked(limit)
		case length >= 0:
			if length > limit {
				return 0, nil, fmt.Errorf("response longer than %d bytes", limit)
			}
			h.body = append(h.body, make([]byte, length)...)[:length]
			_, err = io.ReadFull(br, h.body)
		default: // until the connection ends
			keepAlive = false
			err = h.readAll(br, limit)
		}
		if err != nil {
			return 0, nil, err
		}
		if !keepAlive {
			h.Close()
		}
		return status, h.body, nil
	}
}

// readChunked reads a chunked body into h.body.
func (h *H1Conn) readChunked(limit int) error {
	br := h.br
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
		if err != nil || n < 0 {
			return errResponse
		}
		if n == 0 {
			for { // trailer
				line, err := br.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return nil
				}
			}
		}
		if int64(len(h.body))+n > int64(limit) {
			return fmt.Errorf("response longer than %d bytes", limit)
		}
		start := len(h.body)
		h.body = append(h.body, make([]byte, n)...)
		if _, err := io.ReadFull(br, h.body[start:]); err != nil {
			return err
		}
		if _, err := br.Discard(2); err != nil { // CRLF
			return err
		}
	}
}

// readAll reads r to EOF into h.body.
func (h *H1Conn) readAll(r io.Reader, limit int) error {
	var buf [4096]byte
	for {
		n, err := r.Read(buf[:])
		if len(h.body)+n > limit {
			return fmt.Errorf("response longer than %d bytes", limit)
		}
		h.body = append(h.body, buf[:n]...)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parseDecimal parses 1 to 9 ASCII digits.
func parseDecimal(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// equalFold reports whether b is s, ignoring ASCII case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(s) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
