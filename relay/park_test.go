//go:build linux

package relay

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/testkit/wsconn"
)

// openIdleCarrier opens a carrier that sends the token and a ClientID, and
// nothing else.
func openIdleCarrier(t *testing.T, wsURL string) (*websocket.Conn, net.Conn) {
	t.Helper()
	ws, _, err := dialFrom(wsURL, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := wsconn.New(ws)
	id := turbotunnel.NewClientID()
	if _, err := conn.Write(append(append([]byte(nil), turbotunnel.Token[:]...), id[:]...)); err != nil {
		t.Fatal(err)
	}
	return ws, conn
}

// TestParkedCarrierCarriesOn: a carrier with a session parks when it
// idles, and carries the session's traffic again when some comes.
func TestParkedCarrierCarriesOn(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: echoServer(t), NumTurbotunnel: 1})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	echoRoundTrip(t, client, testPayload(64<<10), nil)
	eventually(t, "the idle carrier is parked", func() bool { return r.Stats().ParkedConnections == 1 })
	echoRoundTrip(t, client, testPayload(1<<20), nil)
	if st := r.Stats(); st.Connections != 1 || st.ActiveConnections != 1 {
		t.Errorf("%d connections, %d live; want 1, 1", st.Connections, st.ActiveConnections)
	}
}

// TestParkedCarrierPingAndIdleTimeout: a parked carrier answers pings (which
// do not count as traffic) and is closed at its idle deadline.
func TestParkedCarrierPingAndIdleTimeout(t *testing.T) {
	const idle = 3 * time.Second
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", CarrierIdleTimeout: idle})
	start := time.Now()
	ws, conn := openIdleCarrier(t, wsURL)
	pongs := make(chan struct{}, 1)
	ws.SetPongHandler(func(string) error {
		pongs <- struct{}{}
		return nil
	})
	eventually(t, "the idle carrier is parked", func() bool { return r.Stats().ParkedConnections == 1 })
	if err := ws.WriteControl(websocket.PingMessage, []byte("hi"), time.Now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitEOF(t, conn) // reads, so that the pong handler runs
	select {
	case <-pongs:
	default:
		t.Error("no pong")
	}
	if d := time.Since(start); d < idle {
		t.Errorf("carrier closed after %v, before its idle timeout of %v", d, idle)
	}
	eventually(t, "the carrier is gone", func() bool {
		st := r.Stats()
		return st.ActiveConnections == 0 && st.ParkedConnections == 0
	})
}

// TestPaddingKeepsCarrier: padding counts as traffic for the idle timeout,
// and a carrier that has received only padding parks.
func TestPaddingKeepsCarrier(t *testing.T) {
	const idle = 3 * time.Second
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", CarrierIdleTimeout: idle})
	_, conn := openIdleCarrier(t, wsURL)
	defer conn.Close()
	var pad bytes.Buffer
	if _, err := encapsulation.WritePadding(&pad, 1); err != nil {
		t.Fatal(err)
	}
	for range 2 * idle / time.Second {
		time.Sleep(idle / 3)
		if _, err := conn.Write(pad.Bytes()); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the carrier is parked", func() bool { return r.Stats().ParkedConnections == 1 })
	}
	if st := r.Stats(); st.ActiveConnections != 1 {
		t.Errorf("%d carriers open after %v of padding, want 1", st.ActiveConnections, idle)
	}
}

// TestTLSCarrierParks: a wss carrier parks and wakes like a plain one
// (readiness of the socket under TLS), and the relay's Close ends it
// cleanly.
func TestTLSCarrierParks(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	cert := ts.TLS.Certificates[0] // httptest's own certificate for 127.0.0.1
	ts.Close()
	const idle = 3 * time.Second
	r, wsURL := startRelay(t, Config{
		ForwardAddr:        "127.0.0.1:1",
		TLSConfig:          &tls.Config{Certificates: []tls.Certificate{cert}},
		CarrierIdleTimeout: idle,
	})
	d := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		TLSClientConfig:  &tls.Config{InsecureSkipVerify: true}, // #nosec G402 -- the test's own relay
	}
	ws, resp, err := d.Dial("wss"+strings.TrimPrefix(wsURL, "ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	conn := wsconn.New(ws)
	defer conn.Close()
	id := turbotunnel.NewClientID()
	if _, err := conn.Write(append(append([]byte(nil), turbotunnel.Token[:]...), id[:]...)); err != nil {
		t.Fatal(err)
	}
	// Padding past the idle timeout, each time to a parked carrier: it
	// stays open only if each one woke it.
	var pad bytes.Buffer
	if _, err := encapsulation.WritePadding(&pad, 1); err != nil {
		t.Fatal(err)
	}
	for range 2 * idle / time.Second {
		eventually(t, "the carrier is parked", func() bool { return r.Stats().ParkedConnections == 1 })
		time.Sleep(idle / 3)
		if _, err := conn.Write(pad.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	if st := r.Stats(); st.ActiveConnections != 1 {
		t.Fatalf("%d carriers open after %v of padding, want 1", st.ActiveConnections, 2*idle)
	}
	r.Close()
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, conn)
	if isTimeout(err) || err != nil && strings.Contains(err.Error(), "bad record MAC") {
		t.Errorf("client, after the relay closed: %v", err)
	}
}
