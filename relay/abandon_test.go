package relay

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// startDownload opens a stream of client and reads n bytes of it.
func startDownload(t *testing.T, client *testClient, n int64) (io.ReadCloser, []byte) {
	t.Helper()
	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(stream, got); err != nil {
		t.Fatalf("download: %v", err)
	}
	return stream, got
}

// A client that vanishes mid-download: its session goes silent (no more
// packets queued for nobody) once its queue's lifetime has passed without
// a carrier, then is closed with its streams.
func TestAbandonedSessionSilencedThenClosed(t *testing.T) {
	r, wsURL := startRelay(t, Config{
		ForwardAddr:    sourceServer(t, 8<<20, 1),
		NumTurbotunnel: 1,
		ClientTimeout:  300 * time.Millisecond,
		AbandonTimeout: 3 * time.Second,
	})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	carrier := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	startDownload(t, client, 1<<20)
	// The client vanishes without a word: its proxy dies, then it stops.
	carrier.kill()
	<-carrier.done
	client.Close()

	eventually(t, "the session goes silent", func() bool { return r.Stats().SilentSessions == 1 })
	pc := r.shards[0].pconn
	eventually(t, "its queue is gone", func() bool { return pc.Stats().Clients == 0 })
	drops, silenced := pc.Stats().OutgoingDropped, r.Stats().SilentDrops
	eventually(t, "KCP retransmits into nothing", func() bool { return r.Stats().SilentDrops > silenced })
	if st := pc.Stats(); st.Clients != 0 || st.OutgoingDropped != drops {
		t.Errorf("silent session still queued: %d queues, %d then %d drops", st.Clients, drops, st.OutgoingDropped)
	}
	if st := r.Stats(); st.ActiveSessions != 1 || st.SessionsAbandoned != 0 {
		t.Errorf("%d sessions, %d abandoned before the abandon timeout; want 1, 0", st.ActiveSessions, st.SessionsAbandoned)
	}

	eventually(t, "the session is closed", func() bool {
		st := r.Stats()
		return st.ActiveSessions == 0 && st.ActiveStreams == 0
	})
	if st := r.Stats(); st.SessionsAbandoned != 1 || st.SilentSessions != 0 {
		t.Errorf("%d abandoned, %d silent; want 1, 0", st.SessionsAbandoned, st.SilentSessions)
	}
}

// A client that comes back through a new proxy after its session went
// silent finds it, and its download completes intact.
func TestSilentSessionWakes(t *testing.T) {
	const size = 4 << 20
	r, wsURL := startRelay(t, Config{
		ForwardAddr:    sourceServer(t, size, 2),
		ClientTimeout:  200 * time.Millisecond,
		AbandonTimeout: time.Minute,
	})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	first := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	stream, head := startDownload(t, client, 1<<20)
	defer stream.Close()

	first.kill()
	<-first.done
	eventually(t, "the session goes silent", func() bool { return r.Stats().SilentSessions == 1 })
	pconn.dialCarrier(t, wsURL)
	finishDownload(t, "after the silence", stream, head, size, 2)
	if st := r.Stats(); st.Sessions != 1 || st.SilentSessions != 0 || st.SessionsAbandoned != 0 || st.SessionsResent != 1 {
		t.Errorf("%d sessions, %d silent, %d abandoned, %d resent; want 1, 0, 0, 1", st.Sessions, st.SilentSessions, st.SessionsAbandoned, st.SessionsResent)
	}
}

// A client whose proxy dies mid-download and that comes back through a
// new one soon after (long before its session would go silent) has what
// is in flight resent once, and its download completes intact; a second
// carrier beside a live one changes nothing, and the loss of one of two
// makes the relay resend again.
func TestSessionResumesOnNewCarrier(t *testing.T) {
	const size = 4 << 20
	r, wsURL := startRelay(t, Config{ForwardAddr: sourceServer(t, size, 3)})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	first := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	stream, head := startDownload(t, client, 1<<20)
	defer stream.Close()

	first.kill()
	<-first.done
	eventually(t, "the relay lets the dead carrier go", func() bool { return r.Stats().ActiveConnections == 0 })
	pconn.dialCarrier(t, wsURL)
	second := pconn.dialCarrier(t, wsURL)
	finishDownload(t, "after the new carrier", stream, head, size, 3)
	if st := r.Stats(); st.Sessions != 1 || st.SilentSessions != 0 || st.SessionsResent != 1 {
		t.Errorf("%d sessions, %d silent, %d resent; want 1, 0, 1", st.Sessions, st.SilentSessions, st.SessionsResent)
	}
	second.kill()
	eventually(t, "one of two carriers gone: resent again", func() bool { return r.Stats().SessionsResent == 2 })
}

// finishDownload reads the rest of a download whose first bytes were head
// and checks that all of it is sourceServer's size bytes of seed.
func finishDownload(t *testing.T, when string, stream io.Reader, head []byte, size int, seed uint64) {
	t.Helper()
	h := sha256.New()
	h.Write(head)
	n, err := io.Copy(h, stream)
	if err != nil || int(n)+len(head) != size {
		t.Fatalf("download %s: %d bytes, %v; want %d", when, int(n)+len(head), err, size)
	}
	if !bytes.Equal(h.Sum(nil), sourceDigest(size, seed)) {
		t.Fatalf("download %s corrupted", when)
	}
}
