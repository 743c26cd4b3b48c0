package relay

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/internal/testkit/wsconn"
)

// Tests of sealed carriers (seal.go) and of the two attacks of a proxy
// that has carried a session: injecting KCP segments, and pulling the
// session's downstream to carriers of its own (docs/security.md).

// newSealedPacketConn is a test client's packet conn whose carriers are
// sealed toward the relay whose public key is relay.
func newSealedPacketConn(tb testing.TB, relay tunnelseal.PublicKey) *testPacketConn {
	tb.Helper()
	s, err := tunnelseal.NewClient(relay)
	if err != nil {
		tb.Fatal(err)
	}
	p := newTestPacketConn(s.ClientID())
	p.seal = s
	return p
}

// list returns the carriers open now.
func (p *testPacketConn) list() []*testCarrier {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*testCarrier(nil), p.carriers...)
}

// joinSealed sends a sealed join header on c.
func (p *testPacketConn) joinSealed(tb testing.TB, c *testCarrier) {
	tb.Helper()
	hdr, send, recv, err := p.seal.Join()
	if err != nil {
		tb.Fatal(err)
	}
	c.send, c.recv, c.header = send, recv, hdr[:]
	if _, err := c.conn.Write(hdr[:]); err != nil {
		tb.Fatal(err)
	}
}

// sealedRelay starts a relay with a relay key, forwarding to target.
func sealedRelay(t *testing.T, target string) (*Relay, string, tunnelseal.PublicKey) {
	t.Helper()
	key, err := tunnelseal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := key.Public()
	r, u := startRelay(t, Config{ForwardAddr: target, RelayKey: &key, NumTurbotunnel: 1})
	return r, u, pub
}

// attackMode is how the client under attack speaks.
type attackMode struct {
	name   string
	sealed bool
}

var attackModes = []attackMode{{"snowflake", false}, {"sealed", true}}

// clientFor starts a test client of mode with n carriers.
func clientFor(t *testing.T, m attackMode, u string, pub tunnelseal.PublicKey, n int) *testClient {
	t.Helper()
	var pc *testPacketConn
	if m.sealed {
		pc = newSealedPacketConn(t, pub)
	} else {
		pc = newTestPacketConn(turbotunnel.NewClientID())
	}
	for range n {
		pc.dialCarrier(t, u)
	}
	return newTestClient(t, pc)
}

func TestSealedEcho(t *testing.T) {
	_, u, pub := sealedRelay(t, echoServer(t))
	c := clientFor(t, attackMode{sealed: true}, u, pub, 2)
	echoRoundTrip(t, c, testPayload(1<<20), func() {
		// A carrier lost and another joining mid-transfer.
		c.pconn.list()[0].kill()
		c.pconn.dialCarrier(t, u)
	})
}

func TestSnowflakeClientWithRelayKey(t *testing.T) {
	_, u, pub := sealedRelay(t, echoServer(t))
	echoRoundTrip(t, clientFor(t, attackMode{}, u, pub, 1), testPayload(256<<10), nil)
}

// forgedSegments is what the injection attack sends: KCP push segments
// of conv, sn 0 to 31, whose data is not a smux frame: the one at the
// relay's next expected sn reaches smux, which ends the session.
func forgedSegments(conv uint32) []byte {
	var b bytes.Buffer
	for sn := range uint32(32) {
		seg := make([]byte, 24+8)
		binary.LittleEndian.PutUint32(seg, conv)
		seg[4] = turbotunnel.KCPCmdPush
		binary.LittleEndian.PutUint16(seg[6:], 128)
		binary.LittleEndian.PutUint32(seg[12:], sn)
		binary.LittleEndian.PutUint32(seg[20:], 8)
		copy(seg[24:], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		encapsulation.WriteData(&b, seg)
	}
	return b.Bytes()
}

// attackerCarrier opens a carrier as the attacker, sends first, and
// counts what the relay sends it until it is closed.
func attackerCarrier(t *testing.T, u string, first []byte, got *atomic.Int64) net.Conn {
	t.Helper()
	ws, err := dialWS(u)
	if err != nil {
		t.Fatal(err)
	}
	conn := wsconn.New(ws)
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write(first); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := conn.Read(buf)
			got.Add(int64(n))
			if err != nil {
				return
			}
		}
	}()
	return conn
}

// carriersOf returns how many carriers the relay has attached to id.
func carriersOf(r *Relay, id turbotunnel.ClientID) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.clients[id]; st != nil {
		return st.carriers
	}
	return 0
}

// stolenHeaders are the first bytes of the attacker's carriers: the
// ClientID with Snowflake's token, and (sealed) the join header the
// attacker saw on the carrier it carried, replayed.
func stolenHeaders(c *testClient) [][]byte {
	id := c.pconn.id
	h := [][]byte{append(turbotunnel.Token[:], id[:]...)}
	if hdr := c.pconn.list()[0].header; hdr != nil {
		h = append(h, hdr)
	}
	return h
}

// TestInjectionAttack: a proxy that carried a session sends 32 forged KCP
// segments for it. Snowflake's protocol loses the session; a sealed
// session drops them before KCP and lives on.
func TestInjectionAttack(t *testing.T) {
	for _, m := range attackModes {
		t.Run(m.name, func(t *testing.T) {
			r, u, pub := sealedRelay(t, echoServer(t))
			c := clientFor(t, m, u, pub, 2)
			// Small, so that the relay's next expected sn is below 32 (an
			// attacker on the path reads it from the packets it carries).
			echoRoundTrip(t, c, testPayload(1<<10), nil)
			forged := forgedSegments(c.kcp.GetConv())
			var got atomic.Int64
			for _, h := range stolenHeaders(c) {
				attackerCarrier(t, u, append(append([]byte(nil), h...), forged...), &got)
			}
			if m.sealed {
				// And into the carrier the attacker carries (under the
				// lock the client's own writes take).
				cr := c.pconn.list()[0]
				cr.wmu.Lock()
				cr.conn.Write(forged)
				cr.wmu.Unlock()
			}
			// The session ends within 0.1 s in Snowflake's protocol;
			// give it 2 s.
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) && r.Stats().ActiveSessions > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			alive := r.Stats().ActiveSessions > 0
			if !m.sealed {
				// The weakness, shown: usually the session ends within
				// 0.1 s. Whether the forged segments hit KCP's window
				// depends on the sequence numbers in flight at that
				// moment, so a miss is reported, not failed (about one
				// run in ten under -race).
				t.Logf("Snowflake session ended by the injection: %v", !alive)
				return
			}
			if !alive {
				t.Fatal("injected segments ended a sealed session")
			}
			if len(c.pconn.list()) == 0 {
				c.pconn.dialCarrier(t, u)
			}
			echoRoundTrip(t, c, testPayload(64<<10), nil)
			st := r.Stats()
			t.Logf("seal failures %d, handshake failures %v", st.SealFailures, st.HandshakeFailures)
		})
	}
}

// waitUntil polls cond until it holds, for 10 s at most.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStealAttack: a proxy that carried a session opens four carriers of
// its own with what it saw, and reads. With Snowflake's protocol they
// pull most of the session's downstream; sealed, they get nothing.
func TestStealAttack(t *testing.T) {
	const size = 4 << 20
	source := loopback.Accept(t, func(c net.Conn) {
		var one [1]byte
		if _, err := io.ReadFull(c, one[:]); err != nil {
			return
		}
		c.Write(testPayload(size))
		c.(*net.TCPConn).CloseWrite()
	})
	for _, m := range attackModes {
		t.Run(m.name, func(t *testing.T) {
			r, u, pub := sealedRelay(t, source)
			c := clientFor(t, m, u, pub, 1)
			stream, err := c.smux.OpenStream()
			if err != nil {
				t.Fatal(err)
			}
			defer stream.Close()
			// The attack is on a session under way: the client's own
			// carrier has joined first. (A carrier that races the
			// client's first one to the relay is docs/security.md's
			// "first-carrier race", not tested here.)
			waitUntil(t, func() bool { return carriersOf(r, c.pconn.id) == 1 })
			var stolen atomic.Int64
			headers := stolenHeaders(c)
			for _, h := range headers {
				for range 4 {
					attackerCarrier(t, u, h, &stolen)
				}
			}
			// Start the download once the relay has dealt with every
			// attacker carrier: attached it to the session or refused it.
			// (Upgraded is not enough: a fast download could end before
			// the relay read the attackers' first messages.)
			waitUntil(t, func() bool {
				st := r.Stats()
				refused := st.HandshakeFailures[failJoin] + st.HandshakeFailures[failBadSeal]
				return int64(carriersOf(r, c.pconn.id))+int64(refused) >= 1+4*int64(len(headers))
			})
			attached := carriersOf(r, c.pconn.id)
			stream.Write([]byte{1})
			stream.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, _ := io.Copy(io.Discard, stream)
			share := float64(stolen.Load()) / float64(stolen.Load()+n)
			t.Logf("%d carriers on the session; client got %d of %d bytes; attacker carriers got %d bytes (%.0f%% of downstream)",
				attached, n, size, stolen.Load(), 100*share)
			if !m.sealed {
				// The weakness: the attacker's carriers joined the
				// session, so the relay spreads its downstream over them
				// (how much they take depends on scheduling: 83 % in a
				// typical run, none when the client's own carrier drains
				// the queue first on a fast loopback).
				if attached != 1+4 {
					t.Fatalf("%d carriers on the session, want the client's and the attacker's 4: the attack test is broken", attached)
				}
				return
			}
			if attached != 1 {
				t.Errorf("sealed session: %d carriers attached, want the client's alone", attached)
			}
			if n != size || stolen.Load() > 0 {
				t.Fatalf("sealed session: client got %d of %d bytes, attacker %d", n, size, stolen.Load())
			}
		})
	}
}
