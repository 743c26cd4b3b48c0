package wscarrier

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// NewWSDialer returns a WebSocket dialer of its own (never
// websocket.DefaultDialer) with small buffers: the load generator may hold
// tens of thousands of carriers. sources, if not nil, gives each
// connection its source address.
func NewWSDialer(insecure, allow bool, handshake time.Duration, sources *SourceAddrs) *websocket.Dialer {
	return &websocket.Dialer{
		NetDialContext:   dialFrom(measure.NewDialer(allow), sources),
		HandshakeTimeout: handshake,
		ReadBufferSize:   1024,
		WriteBufferSize:  1024,
		WriteBufferPool:  new(sync.Pool),
		// #nosec G402 -- only with -insecure, for self-signed test relays.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12},
	}
}

// DialCarrier opens a WebSocket to u and sends the turbotunnel prefix:
//
//	+-----------------------------+----------------------+
//	| Token 12 93 60 5d 27 81 75 f5 | ClientID (8 bytes) |
//	+-----------------------------+----------------------+
//
// as one binary message, as a Snowflake proxy forwards it.
func DialCarrier(ctx context.Context, d *websocket.Dialer, u *url.URL, id turbotunnel.ClientID) (*websocket.Conn, error) {
	ws, resp, err := d.DialContext(ctx, u.String(), nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	var prefix [2 * turbotunnel.TokenLen]byte
	copy(prefix[:], turbotunnel.Token[:])
	copy(prefix[turbotunnel.TokenLen:], id[:])
	_ = ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := ws.WriteMessage(websocket.BinaryMessage, prefix[:]); err != nil {
		ws.Close()
		return nil, err
	}
	_ = ws.SetWriteDeadline(time.Time{})
	return ws, nil
}

// messageStream reads the data of consecutive WebSocket messages as one
// byte stream (message boundaries carry no meaning in Snowflake's framing).
// One goroutine reads.
type messageStream struct {
	ws *websocket.Conn
	r  io.Reader // current message, nil between messages
}

func (m *messageStream) Read(p []byte) (int, error) {
	for {
		if m.r == nil {
			typ, r, err := m.ws.NextReader()
			if err != nil {
				return 0, err
			}
			if typ != websocket.BinaryMessage && typ != websocket.TextMessage {
				continue
			}
			m.r = r
		}
		n, err := m.r.Read(p)
		if err == io.EOF {
			m.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}

// CarrierConn is a net.PacketConn for KCP over one carrier: each packet
// written becomes one encapsulated data chunk in one binary message; reads
// parse encapsulation from the stream of messages and skip padding.
type CarrierConn struct {
	WS     *websocket.Conn
	br     *bufio.Reader // owned by the reading goroutine (KCP's reader)
	remote net.Addr

	wmu  sync.Mutex
	wbuf bytes.Buffer // guarded by wmu

	closeOnce sync.Once
}

// NewCarrierConn runs KCP over ws; remote is the address KCP sees.
func NewCarrierConn(ws *websocket.Conn, remote net.Addr) *CarrierConn {
	return &CarrierConn{
		WS:     ws,
		br:     bufio.NewReaderSize(&messageStream{ws: ws}, 4096),
		remote: remote,
	}
}

func (c *CarrierConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, err := encapsulation.ReadData(c.br, p)
	if err == io.ErrShortBuffer {
		err = nil // truncated packet: KCP will drop it
	}
	return n, c.remote, err
}

func (c *CarrierConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf.Reset()
	if _, err := encapsulation.WriteData(&c.wbuf, p); err != nil {
		return 0, err
	}
	if err := c.WS.WriteMessage(websocket.BinaryMessage, c.wbuf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WritePadding sends one padding chunk, a keepalive that carries no data.
func (c *CarrierConn) WritePadding(n int) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf.Reset()
	if _, err := encapsulation.WritePadding(&c.wbuf, n); err != nil {
		return err
	}
	return c.WS.WriteMessage(websocket.BinaryMessage, c.wbuf.Bytes())
}

func (c *CarrierConn) Close() error {
	c.closeOnce.Do(func() { c.WS.Close() })
	return nil
}

func (c *CarrierConn) LocalAddr() net.Addr { return c.WS.LocalAddr() }

func (c *CarrierConn) SetDeadline(t time.Time) error { return c.WS.NetConn().SetDeadline(t) }

func (c *CarrierConn) SetReadDeadline(t time.Time) error { return c.WS.SetReadDeadline(t) }

func (c *CarrierConn) SetWriteDeadline(t time.Time) error { return c.WS.SetWriteDeadline(t) }

// Defaults of dialing carriers.
const (
	DefaultDialConcurrency  = 64
	DefaultHandshakeTimeout = 10 * time.Second
)
