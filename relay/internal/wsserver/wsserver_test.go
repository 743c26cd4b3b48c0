package wsserver

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// testTimeout makes a test fail rather than hang.
const testTimeout = 30 * time.Second

// RFC 6455's opcodes, bits and lengths, for frames written by hand.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa

	closeNormal     = 1000
	finBit          = 0x80
	maskBit         = 0x80
	payloadLen16    = 126
	payloadLen64    = 127
	maxPayloadLen7  = 125
	maxPayloadLen16 = 0xffff
)

// pair upgrades one connection from a gorilla client (over TLS with
// useTLS) and returns both ends.
func pair(t *testing.T, useTLS bool) (*Conn, *websocket.Conn) {
	t.Helper()
	pools := NewPools()
	conns := make(chan *Conn, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c, err := Upgrade(w, req, pools, testTimeout)
		if err != nil {
			t.Errorf("upgrade: %v", err)
		}
		conns <- c
	})
	var srv *httptest.Server
	d := websocket.Dialer{HandshakeTimeout: testTimeout}
	if useTLS {
		srv = httptest.NewTLSServer(h)
		d.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // #nosec G402 -- the test's own server
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	ws, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Cleanup(func() { ws.Close() })
	c := <-conns
	if c == nil {
		t.FailNow()
	}
	t.Cleanup(func() { c.Close() })
	deadline := time.Now().Add(testTimeout)
	if err := c.SetDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	if err := ws.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	return c, ws
}

// rawPair upgrades one connection whose client end is the bare TCP
// connection, for writing frames by hand.
func rawPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	c, ws := pair(t, false)
	raw := ws.NetConn()
	if err := raw.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	return c, raw
}

// frame returns one masked client frame.
func frame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= finBit
	}
	b := []byte{b0}
	switch {
	case len(payload) <= maxPayloadLen7:
		b = append(b, maskBit|byte(len(payload)))
	case len(payload) <= maxPayloadLen16:
		b = binary.BigEndian.AppendUint16(append(b, maskBit|payloadLen16), uint16(len(payload)))
	default:
		b = binary.BigEndian.AppendUint64(append(b, maskBit|payloadLen64), uint64(len(payload)))
	}
	key := [4]byte{1, 2, 3, 4}
	b = append(b, key[:]...)
	for i, x := range payload {
		b = append(b, x^key[i%4])
	}
	return b
}

func TestMessagesBothWays(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[useTLS], func(t *testing.T) {
			c, ws := pair(t, useTLS)
			want := bytes.Repeat([]byte("0123456789"), 2000) // larger than a read buffer
			for _, size := range []int{1, 125, 126, 1403, len(want)} {
				if err := ws.WriteMessage(websocket.BinaryMessage, want[:size]); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, size)
				if _, err := io.ReadFull(c, got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want[:size]) {
					t.Fatalf("%d bytes read differ from those sent", size)
				}
				if _, err := c.Write(want[:size]); err != nil {
					t.Fatal(err)
				}
				typ, msg, err := ws.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				if typ != websocket.BinaryMessage || !bytes.Equal(msg, want[:size]) {
					t.Fatalf("message of %d bytes: type %d, %d bytes back", size, typ, len(msg))
				}
			}
		})
	}
}

func TestFragmentsPingsAndClose(t *testing.T) {
	c, raw := rawPair(t)
	var in []byte
	in = append(in, frame(false, opText, []byte("hel"))...)
	in = append(in, frame(true, opPing, []byte("are you there"))...)
	in = append(in, frame(true, opContinuation, []byte("lo"))...)
	in = append(in, frame(true, opBinary, nil)...) // empty: skipped
	in = append(in, frame(true, opBinary, []byte(" world"))...)
	in = append(in, frame(true, opClose, binary.BigEndian.AppendUint16(nil, closeNormal))...)
	if _, err := raw.Write(in); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "hello world" {
		t.Fatalf("read %q, %v; want \"hello world\", nil", got, err)
	}
	// The pong, then the answer to the close frame.
	want := append([]byte{finBit | opPong, 13}, "are you there"...)
	want = append(want, finBit|opClose, 2, 0x03, 0xe8)
	out := make([]byte, len(want))
	if _, err := io.ReadFull(raw, out); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("server sent % x, want % x", out, want)
	}
}

func TestCloseCodes(t *testing.T) {
	for _, tt := range []struct {
		payload []byte
		want    error
	}{
		{nil, io.EOF},
		{binary.BigEndian.AppendUint16(nil, closeNormal), io.EOF},
		{append(binary.BigEndian.AppendUint16(nil, 1001), "going away"...), &closeError{Code: 1001}},
		{[]byte{3}, errProtocol},
	} {
		c, raw := rawPair(t)
		if _, err := raw.Write(frame(true, opClose, tt.payload)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Read(make([]byte, 1))
		var ce *closeError
		switch want := tt.want.(type) {
		case *closeError:
			if !errors.As(err, &ce) || ce.Code != want.Code {
				t.Errorf("close frame % x: %v, want close code %d", tt.payload, err, want.Code)
			}
		default:
			if !errors.Is(err, want) {
				t.Errorf("close frame % x: %v, want %v", tt.payload, err, want)
			}
		}
	}
}

func TestProtocolErrors(t *testing.T) {
	unmasked := frame(true, opBinary, []byte("x"))
	unmasked[1] &^= maskBit
	unmasked = append(unmasked[:2], 'x')
	for name, in := range map[string][]byte{
		"unmasked":              unmasked,
		"reserved bit":          append([]byte{finBit | 0x40 | opBinary}, frame(true, opBinary, nil)[1:]...),
		"reserved opcode":       frame(true, 0x3, nil),
		"continuation first":    frame(true, opContinuation, []byte("x")),
		"message in a fragment": append(frame(false, opBinary, []byte("x")), frame(true, opBinary, []byte("y"))...),
		"long ping":             frame(true, opPing, make([]byte, 126)),
		"fragmented ping":       frame(false, opPing, nil),
	} {
		t.Run(name, func(t *testing.T) {
			c, raw := rawPair(t)
			if _, err := raw.Write(in); err != nil {
				t.Fatal(err)
			}
			_, err := io.ReadAll(c)
			if !errors.Is(err, errProtocol) {
				t.Errorf("read: %v, want errProtocol", err)
			}
			want := []byte{finBit | opClose, 2, 0x03, 0xea} // 1002
			out := make([]byte, len(want))
			if _, err := io.ReadFull(raw, out); err != nil || !bytes.Equal(out, want) {
				t.Errorf("server sent % x (%v), want a close frame with 1002", out, err)
			}
		})
	}
}

// TestTimeoutResumes: a read that times out inside a frame header or
// payload, with the read buffer released in between, goes on where it
// stopped.
func TestTimeoutResumes(t *testing.T) {
	c, raw := rawPair(t)
	msg := bytes.Repeat([]byte("abcdefgh"), 100)
	f := frame(true, opBinary, msg)
	got := make([]byte, 0, len(msg))
	buf := make([]byte, 300)
	sent := 0
	for _, cut := range []int{1, 3, 200, len(f)} { // inside the header, the mask, the payload; the end
		if _, err := raw.Write(f[sent:cut]); err != nil {
			t.Fatal(err)
		}
		sent = cut
		for {
			if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("read: %v, want a timeout", err)
				}
				c.Release()
				break
			}
		}
	}
	if !bytes.Equal(got, msg) {
		t.Errorf("read %d bytes, not the %d sent", len(got), len(msg))
	}
}

// TestNoCloseNotifyAfterFailedWrite: after a write fails on a TLS
// connection, Close must not send TLS's close_notify. crypto/tls has
// spent the failed record's sequence number, so the peer, which never got
// that record, reads the alert as "bad record MAC" (seen by flurry-loadgen
// as its carriers were closed by a loaded relay: the close frame's 500 ms
// deadline had passed before it was written).
func TestNoCloseNotifyAfterFailedWrite(t *testing.T) {
	c, ws := pair(t, true)
	if err := c.SetWriteDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("late")); err == nil {
		t.Fatal("write past its deadline succeeded")
	}
	if _, err := c.Write([]byte("later")); err == nil {
		t.Fatal("write after a failed one succeeded")
	}
	c.Close()
	_, _, err := ws.ReadMessage()
	if err == nil {
		t.Fatal("client read a message")
	}
	if strings.Contains(err.Error(), "bad record MAC") {
		t.Errorf("client: %v", err)
	}
}

func TestHandshakeRefusals(t *testing.T) {
	pools := NewPools()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if c, err := Upgrade(w, req, pools, testTimeout); err == nil {
			c.Close()
			t.Error("upgrade accepted")
		}
	}))
	defer srv.Close()
	good := http.Header{
		"Connection":            {"keep-alive, Upgrade"},
		"Upgrade":               {"websocket"},
		"Sec-Websocket-Version": {"13"},
		"Sec-Websocket-Key":     {"dGhlIHNhbXBsZSBub25jZQ=="},
	}
	for _, tt := range []struct {
		name   string
		method string
		header string // header to drop or change
		value  string
		code   int
	}{
		{"POST", http.MethodPost, "", "", http.StatusMethodNotAllowed},
		{"no upgrade", http.MethodGet, "Upgrade", "", http.StatusBadRequest},
		{"no connection", http.MethodGet, "Connection", "close", http.StatusBadRequest},
		{"version 8", http.MethodGet, "Sec-Websocket-Version", "8", http.StatusUpgradeRequired},
		{"short key", http.MethodGet, "Sec-Websocket-Key", "c2hvcnQ=", http.StatusBadRequest},
	} {
		req, err := http.NewRequest(tt.method, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = good.Clone()
		if tt.header != "" {
			req.Header.Set(tt.header, tt.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.code)
		}
		if tt.name == "version 8" && resp.Header.Get("Sec-WebSocket-Version") != "13" {
			t.Errorf("%s: no Sec-WebSocket-Version: 13 in the answer", tt.name)
		}
	}
}

// A browser proxy passes each WebSocket message on as one DataChannel
// message, and a Snowflake client (pion) reads at most 65 535 bytes of one.
func TestMaxSingleWriteFitsADataChannelMessage(t *testing.T) {
	if MaxSingleWrite > 65535 {
		t.Fatalf("MaxSingleWrite = %d, more than a DataChannel message a Snowflake client reads", MaxSingleWrite)
	}
	if MaxSingleWrite < 32<<10 {
		t.Fatalf("MaxSingleWrite = %d: small messages cost a write each", MaxSingleWrite)
	}
}

func TestWriteWithHeadRoom(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[useTLS], func(t *testing.T) {
			c, ws := pair(t, useTLS)
			want := bytes.Repeat([]byte("0123456789"), MaxSingleWrite/10+1)[:MaxSingleWrite]
			// Each length form of the header: 7 bits, 16 bits.
			for _, size := range []int{1, 125, 126, 1403, 0xffff - HeadRoom, MaxSingleWrite} {
				b := append(make([]byte, HeadRoom, HeadRoom+size), want[:size]...)
				if n, err := c.WriteWithHeadRoom(b); err != nil || n != size {
					t.Fatalf("%d bytes: wrote %d, %v", size, n, err)
				}
				typ, msg, err := ws.ReadMessage()
				if err != nil {
					t.Fatal(err)
				}
				if typ != websocket.BinaryMessage || !bytes.Equal(msg, want[:size]) {
					t.Fatalf("message of %d bytes: type %d, %d bytes back", size, typ, len(msg))
				}
			}
			for _, size := range []int{-1, MaxSingleWrite + 1} {
				b := make([]byte, HeadRoom+size)
				if _, err := c.WriteWithHeadRoom(b); !errors.Is(err, errMessageSize) {
					t.Errorf("%d bytes after the head room: %v, want errMessageSize", size, err)
				}
			}
			// The connection still works after a refused message.
			if _, err := c.WriteWithHeadRoom(append(make([]byte, HeadRoom), "after"...)); err != nil {
				t.Fatal(err)
			}
			if _, msg, err := ws.ReadMessage(); err != nil || string(msg) != "after" {
				t.Fatalf("after a refused message: %q, %v", msg, err)
			}
		})
	}
}
