package proxy

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"
)

// TestDownstreamBatches: what the reader puts while the writer is away is
// taken as one batch, in order; a lone put is taken at once; once the
// reader stops, pending bytes still go out before its error.
func TestDownstreamBatches(t *testing.T) {
	s := newSession()
	d := newDownstream(make([]byte, downstreamMessageSize))
	out := make([]byte, downstreamMessageSize)

	for _, p := range []string{"one", "two", "three"} {
		if !d.put([]byte(p), s) {
			t.Fatal("put refused")
		}
	}
	got, err := d.take(out, s)
	if err != nil || string(got) != "onetwothree" {
		t.Fatalf("take = %q, %v; want the three puts as one batch", got, err)
	}

	done := make(chan []byte)
	go func() {
		b, err := d.take(make([]byte, downstreamMessageSize), s)
		if err != nil {
			t.Error(err)
		}
		done <- b
	}()
	time.Sleep(10 * time.Millisecond) // let take wait first
	d.put([]byte("alone"), s)
	if b := <-done; string(b) != "alone" {
		t.Fatalf("waiting take = %q, want alone", b)
	}

	d.put([]byte("last"), s)
	d.finish(io.EOF)
	if b, err := d.take(out, s); err != nil || string(b) != "last" {
		t.Fatalf("take after finish = %q, %v; want the pending bytes first", b, err)
	}
	if _, err := d.take(out, s); !errors.Is(err, io.EOF) {
		t.Fatalf("take once drained = %v, want the reader's io.EOF", err)
	}
}

// TestDownstreamFull: a put that does not fit fills the pending bytes up
// and waits with the rest until the writer takes them, and gives up when
// the session stops.
func TestDownstreamFull(t *testing.T) {
	s := newSession()
	d := newDownstream(make([]byte, downstreamMessageSize))
	fill := bytes.Repeat([]byte{'x'}, downstreamMessageSize-2)
	d.put(fill, s)

	put := make(chan bool)
	go func() { put <- d.put([]byte("more"), s) }()
	select {
	case <-put:
		t.Fatal("put did not wait for room")
	case <-time.After(10 * time.Millisecond):
	}
	if b, _ := d.take(make([]byte, downstreamMessageSize), s); string(b) != string(fill)+"mo" {
		t.Fatalf("took %d bytes ending in %q, want a full message ending in mo", len(b), b[max(0, len(b)-2):])
	}
	if !<-put {
		t.Fatal("put refused after the writer made room")
	}
	if b, _ := d.take(make([]byte, downstreamMessageSize), s); string(b) != "re" {
		t.Fatalf("took %q, want the rest: re", b)
	}

	d.put(fill, s)
	go func() { put <- d.put([]byte("no room"), s) }()
	time.Sleep(10 * time.Millisecond) // let put wait first
	s.stop(errInactiveForTest)
	if <-put {
		t.Fatal("put succeeded after the session stopped")
	}
	if _, err := newDownstream(make([]byte, 8)).take(nil, s); !errors.Is(err, errInactiveForTest) {
		t.Fatalf("take on a stopped session = %v, want its cause", err)
	}
}

var errInactiveForTest = errors.New("stopped by the test")

// take is takeUpTo with no limit but out's length.
func (d *downstream) take(out []byte, s *session) ([]byte, error) {
	return d.takeUpTo(out, len(out), s)
}
