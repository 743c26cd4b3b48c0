package demo

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"time"
)

// SOCKS5 (RFC 1928) as the demo speaks it: no authentication, CONNECT to an
// IPv4/IPv6 literal.
//
//	greeting   05 01 00                      version 5, one method: no auth
//	choice     05 00                         server picks no auth
//	request    05 01 00 01 <4 bytes> <port>  CONNECT IPv4 (04 + 16 bytes: IPv6)
//	reply      05 00 00 <atyp> <addr> <port> 00 = succeeded
const (
	socksVersion    = 5
	socksNoAuth     = 0
	socksConnect    = 1
	socksAtypIPv4   = 1
	socksAtypDomain = 3
	socksAtypIPv6   = 4
)

// DialSOCKS5 connects to target (an IP:port) through the SOCKS5 server at
// socksAddr. The handshake is bounded by ctx.
func DialSOCKS5(ctx context.Context, socksAddr, target string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil {
		return nil, fmt.Errorf("%w: target %q must be IP:port: %w", ErrSOCKS, target, err)
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", socksAddr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := socksHandshake(c, ap); err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrSOCKS, ctx.Err())
		}
		return nil, err
	}
	if !stop() {
		c.Close()
		return nil, fmt.Errorf("%w: %w", ErrSOCKS, ctx.Err())
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func socksHandshake(c net.Conn, ap netip.AddrPort) error {
	if _, err := c.Write([]byte{socksVersion, 1, socksNoAuth}); err != nil {
		return fmt.Errorf("%w: %w", ErrSOCKS, err)
	}
	var choice [2]byte
	if _, err := io.ReadFull(c, choice[:]); err != nil {
		return fmt.Errorf("%w: reading method choice: %w", ErrSOCKS, err)
	}
	if choice[0] != socksVersion || choice[1] != socksNoAuth {
		return fmt.Errorf("%w: server refused no-auth (% x)", ErrSOCKS, choice)
	}
	req := []byte{socksVersion, socksConnect, 0}
	addr := ap.Addr().Unmap()
	if addr.Is4() {
		req = append(req, socksAtypIPv4)
	} else {
		req = append(req, socksAtypIPv6)
	}
	req = append(req, addr.AsSlice()...)
	req = binary.BigEndian.AppendUint16(req, ap.Port())
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("%w: %w", ErrSOCKS, err)
	}
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return fmt.Errorf("%w: reading reply: %w", ErrSOCKS, err)
	}
	if head[0] != socksVersion {
		return fmt.Errorf("%w: bad reply version %d", ErrSOCKS, head[0])
	}
	if head[1] != 0 {
		return fmt.Errorf("%w: CONNECT refused with code %d", ErrSOCKS, head[1])
	}
	var skip int
	switch head[3] {
	case socksAtypIPv4:
		skip = 4 + 2
	case socksAtypIPv6:
		skip = 16 + 2
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return fmt.Errorf("%w: %w", ErrSOCKS, err)
		}
		skip = int(n[0]) + 2
	default:
		return fmt.Errorf("%w: bad address type %d in reply", ErrSOCKS, head[3])
	}
	if _, err := io.CopyN(io.Discard, c, int64(skip)); err != nil {
		return fmt.Errorf("%w: %w", ErrSOCKS, err)
	}
	return nil
}

// FetchResult describes one download.
type FetchResult struct {
	// Bytes is the body length received, SHA256 its digest.
	Bytes  int64
	SHA256 [sha256.Size]byte
	// Granted is the time until the SOCKS server granted the connection,
	// FirstByte until the first body byte arrived, Total until the last.
	Granted, FirstByte, Total time.Duration
}

// Throughput returns the body's bytes per second from first to last byte.
func (r FetchResult) Throughput() float64 {
	d := r.Total - r.FirstByte
	if d <= 0 {
		return 0
	}
	return float64(r.Bytes) / d.Seconds()
}

// Progress is the live byte count of a download, safe to read from another
// goroutine.
type Progress struct {
	n atomic.Int64
}

// Bytes returns the bytes received so far.
func (p *Progress) Bytes() int64 {
	if p == nil {
		return 0
	}
	return p.n.Load()
}

// Fetch downloads rawURL (http://IP:port/path) through the SOCKS5 server at
// socksAddr with a plain HTTP/1.1 GET and hashes the body as it arrives.
// progress, if not nil, counts the bytes received.
func Fetch(ctx context.Context, socksAddr, rawURL string, progress *Progress) (FetchResult, error) {
	var res FetchResult
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return res, err
	}
	host := req.URL.Host
	if req.URL.Port() == "" {
		host = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	start := time.Now()
	conn, err := DialSOCKS5(ctx, socksAddr, host)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	res.Granted = time.Since(start)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	req.Header.Set("User-Agent", "flurry-demo")
	req.Close = true
	if err := req.Write(conn); err != nil {
		return res, wrapCtx(ctx, err)
	}
	br := bufio.NewReaderSize(conn, 32<<10)
	if _, err := br.Peek(1); err != nil {
		return res, fmt.Errorf("no response: %w", wrapCtx(ctx, err))
	}
	res.FirstByte = time.Since(start)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return res, wrapCtx(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("GET %s: status %s", rawURL, resp.Status)
	}
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			h.Write(buf[:n])
			res.Bytes += int64(n)
			if progress != nil {
				progress.n.Add(int64(n))
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			res.Total = time.Since(start)
			copy(res.SHA256[:], h.Sum(nil))
			return res, fmt.Errorf("after %d bytes: %w", res.Bytes, wrapCtx(ctx, err))
		}
	}
	res.Total = time.Since(start)
	copy(res.SHA256[:], h.Sum(nil))
	if resp.ContentLength >= 0 && res.Bytes != resp.ContentLength {
		return res, fmt.Errorf("got %d bytes, Content-Length %d", res.Bytes, resp.ContentLength)
	}
	return res, nil
}

// FetchTarget fetches t's file through socksAddr and checks its length and
// SHA-256.
func FetchTarget(ctx context.Context, socksAddr string, t *Target, progress *Progress) (FetchResult, error) {
	res, err := Fetch(ctx, socksAddr, t.URL, progress)
	if err != nil {
		return res, err
	}
	if res.Bytes != t.Size || res.SHA256 != t.SHA256 {
		return res, fmt.Errorf("%w: got %d bytes with SHA-256 %x, want %d bytes with %s",
			ErrChecksum, res.Bytes, res.SHA256, t.Size, t.SHA256Hex())
	}
	return res, nil
}

func wrapCtx(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// FormatBytes formats n as a human-readable size.
func FormatBytes(n float64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(n/(1<<30), 'f', 2, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(n/(1<<20), 'f', 2, 64) + " MiB"
	case n >= 1<<10:
		return strconv.FormatFloat(n/(1<<10), 'f', 1, 64) + " KiB"
	}
	return strconv.FormatFloat(n, 'f', 0, 64) + " B"
}
