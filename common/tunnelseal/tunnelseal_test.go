package tunnelseal

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/flurrypt/flurry/common/encapsulation"
)

func newPair(t testing.TB) (*Relay, *Client) {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRelay(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ParsePublicKey(r.PublicKey().String())
	if err != nil || pub != r.PublicKey() {
		t.Fatalf("public key round trip: %v", err)
	}
	c, err := NewClient(pub)
	if err != nil {
		t.Fatal(err)
	}
	return r, c
}

func TestRoundTrip(t *testing.T) {
	r, c := newPair(t)
	hdr, send, recv, err := c.Join()
	if err != nil {
		t.Fatal(err)
	}
	j, err := r.Accept(&hdr)
	if err != nil {
		t.Fatal(err)
	}
	if j.ID != c.ClientID() || j.Join != 1 {
		t.Fatalf("joined %v %d, want %v 1", j.ID, j.Join, c.ClientID())
	}
	for i, dir := range []struct{ s, o *Stream }{{send, j.Recv}, {j.Send, recv}} {
		for n := range 3 {
			p := bytes.Repeat([]byte{byte(n + 1)}, 1400)
			chunk, err := dir.s.AppendChunk(nil, p)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1500)
			m, err := encapsulation.ReadData(bytes.NewReader(chunk), buf)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dir.o.Open(buf[:m])
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("direction %d packet %d: %v", i, n, err)
			}
		}
	}
}

func TestForgeries(t *testing.T) {
	r, c := newPair(t)
	hdr, send, _, err := c.Join()
	if err != nil {
		t.Fatal(err)
	}
	for i := range HeaderLen {
		bad := hdr
		bad[i] ^= 1
		if _, err := r.Accept(&bad); !errors.Is(err, ErrBadHeader) {
			t.Errorf("header with byte %d flipped: %v, want ErrBadHeader", i, err)
		}
	}
	// Another relay's key.
	other, _ := newPair(t)
	if _, err := other.Accept(&hdr); !errors.Is(err, ErrBadHeader) {
		t.Errorf("header for another relay: %v, want ErrBadHeader", err)
	}
	// An attacker's own ephemeral key with the victim's ClientID.
	_, mallory := newPair(t)
	mh, _, _, _ := mallory.Join()
	vid := c.ClientID()
	copy(mh[offsetID:offsetEph], vid[:])
	if _, err := r.Accept(&mh); !errors.Is(err, ErrBadHeader) {
		t.Errorf("foreign ephemeral key for the ClientID: %v, want ErrBadHeader", err)
	}
	j, err := r.Accept(&hdr)
	if err != nil {
		t.Fatal(err)
	}
	// A forged packet, then a replayed one.
	forged, _ := encapsulation.AppendDataPrefix(nil, 40)
	forged = append(forged, make([]byte, 40)...)
	if _, err := j.Recv.Open(forged[1:]); !errors.Is(err, ErrOpen) {
		t.Errorf("forged packet: %v, want ErrOpen", err)
	}
	j, _ = r.Accept(&hdr)
	chunk, _ := send.AppendChunk(nil, []byte("kcp"))
	if _, err := j.Recv.Open(append([]byte(nil), chunk[1:]...)); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Recv.Open(chunk[1:]); !errors.Is(err, ErrOpen) {
		t.Errorf("replayed packet: %v, want ErrOpen", err)
	}
}

// TestExhausted: a stream whose nonce counter has run out neither seals
// nor opens.
func TestExhausted(t *testing.T) {
	r, c := newPair(t)
	hdr, send, _, err := c.Join()
	if err != nil {
		t.Fatal(err)
	}
	j, err := r.Accept(&hdr)
	if err != nil {
		t.Fatal(err)
	}
	send.ctr, j.Recv.ctr = math.MaxUint64, math.MaxUint64
	if _, err := send.AppendChunk(nil, []byte("kcp")); !errors.Is(err, ErrExhausted) {
		t.Errorf("AppendChunk: %v, want ErrExhausted", err)
	}
	if _, err := j.Recv.Open(make([]byte, Overhead)); !errors.Is(err, ErrExhausted) {
		t.Errorf("Open: %v, want ErrExhausted", err)
	}
}

func TestJoinWindow(t *testing.T) {
	var w JoinWindow
	steps := []struct {
		j  uint64
		ok bool
	}{{0, false}, {1, true}, {1, false}, {3, true}, {2, true}, {2, false}, {3, false}, {100, true}, {36, false}, {37, true}, {37, false}, {99, true}, {200, true}, {100, false}}
	for _, s := range steps {
		if got := w.Accept(s.j); got != s.ok {
			t.Fatalf("Accept(%d) = %v, want %v", s.j, got, s.ok)
		}
	}
}

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "relay-key")
	k1, err := LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := LoadOrCreateKeyFile(path)
	if err != nil || k1 != k2 {
		t.Fatalf("reload: %v", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", fi.Mode())
	}
	os.WriteFile(path, []byte("nonsense\n"), 0o600)
	if _, err := LoadOrCreateKeyFile(path); !errors.Is(err, ErrBadKey) {
		t.Errorf("bad key file: %v, want ErrBadKey", err)
	}
}

func TestAppendChunkAllocs(t *testing.T) {
	r, c := newPair(t)
	hdr, send, _, _ := c.Join()
	j, _ := r.Accept(&hdr)
	p := make([]byte, 1400)
	dst := make([]byte, 0, 1500)
	allocs := testing.AllocsPerRun(100, func() {
		out, _ := send.AppendChunk(dst[:0], p)
		if _, err := j.Recv.Open(out[2:]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per packet", allocs)
	}
}

func BenchmarkSealOpen(b *testing.B) {
	r, c := newPair(b)
	hdr, send, _, _ := c.Join()
	j, _ := r.Accept(&hdr)
	p := make([]byte, 1200)
	dst := make([]byte, 0, 1500)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		out, _ := send.AppendChunk(dst[:0], p)
		if _, err := j.Recv.Open(out[2:]); err != nil {
			b.Fatal(err)
		}
	}
}
