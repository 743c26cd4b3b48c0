package broker

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/flurrypt/flurry/messages"
)

// newAdmissionListener returns a plain Listener of a fresh broker.
func newAdmissionListener(t *testing.T) (*Broker, *listener) {
	t.Helper()
	b, err := New(Config{DisableRateLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := b.Listener(inner, nil).(*listener)
	t.Cleanup(func() { b.Close(); l.Close() })
	return b, l
}

func (a *admission) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// acceptOne accepts a connection, failing after a generous bound.
func acceptOne(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		t.Cleanup(func() { r.c.Close() })
		return r.c
	case <-time.After(10 * time.Second):
		t.Fatal("Accept did not return")
		return nil
	}
}

// TestAdmissionBound: Accept admits at most maxAdmitted connections into
// net/http at a time; closing one frees its place, and connections that
// hold their place (silent peers) cannot stop Accept for good.
func TestAdmissionBound(t *testing.T) {
	_, l := newAdmissionListener(t)
	for range maxAdmitted + 2 {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	var held []net.Conn
	for range maxAdmitted {
		held = append(held, acceptOne(t, l))
		if n := l.admission.count(); n < 1 || n > maxAdmitted {
			t.Fatalf("%d admitted", n)
		}
	}
	held[0].Close() // frees a place
	held = append(held, acceptOne(t, l))
	held = append(held, acceptOne(t, l)) // nobody leaves: the oldest places lapse
	if n := l.admission.count(); n < 1 || n > maxAdmitted {
		t.Errorf("%d admitted after a lapse", n)
	}
	for _, c := range held {
		c.Close()
	}
	if n := l.admission.count(); n != 0 {
		t.Errorf("%d admitted after closing them all, want 0", n)
	}
}

// TestAdmissionReleased: polls that park, and other requests, give their
// connection's admission up, however many arrive at once.
func TestAdmissionReleased(t *testing.T) {
	b, l := newAdmissionListener(t)
	b.SetParkAfter(0)
	srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	const polls = 3 * maxAdmitted
	anyRelay := ""
	for i := range polls {
		body, err := messages.ProxyPollRequest{Sid: fmt.Sprint("admitted", i), Type: messages.ProxyTypeStandalone, NAT: messages.NATUnrestricted, AcceptedRelayPattern: &anyRelay}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := fmt.Fprintf(c, "POST /proxy HTTP/1.1\r\nHost: broker\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "GET /debug HTTP/1.1\r\nHost: broker\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for b.Parked() < polls || l.admission.count() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d parked, %d still admitted", b.Parked(), l.admission.count())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
