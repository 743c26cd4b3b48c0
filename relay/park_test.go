//go:build linux

package relay

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/common/websocketconn"
)

// openIdleCarrier opens a carrier that sends the token and a ClientID, and
// nothing else.
func openIdleCarrier(t *testing.T, wsURL string) (*websocket.Conn, net.Conn) {
	t.Helper()
	ws, _, err := dialFrom(wsURL, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := websocketconn.New(ws)
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
