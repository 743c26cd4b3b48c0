package relay

import (
	"testing"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// TestStandbyCarrier: a carrier through which the client sends nothing (a
// standby proxy) takes none of the client's packets while another carrier
// of it is in use, and takes them all once that one is gone.
func TestStandbyCarrier(t *testing.T) {
	_, wsURL := startRelay(t, Config{ForwardAddr: echoServer(t)})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	a := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	echoRoundTrip(t, client, testPayload(1<<10), nil)
	b := pconn.dialStandby(t, wsURL)
	echoRoundTrip(t, client, testPayload(2<<20), nil)
	// A carrier in use that delivered nothing for a second (a machine
	// too busy to run the client) lets the standby take a few.
	if got, in := b.packets.Load(), a.packets.Load(); got*20 > in {
		t.Errorf("the standby carrier took %d packets, the carrier in use %d", got, in)
	}
	before := b.packets.Load()
	echoRoundTrip(t, client, testPayload(2<<20), func() {
		a.kill()
		<-a.done
		b.idle.Store(false) // the client makes it take over
	})
	t.Logf("the standby carrier took %d packets beside the other's %d, then %d alone", before, a.packets.Load(), b.packets.Load()-before)
	if b.packets.Load() == before {
		t.Error("the standby carrier took nothing after the carrier in use left")
	}
}
