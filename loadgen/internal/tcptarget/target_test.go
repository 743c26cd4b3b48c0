package tcptarget

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

func TestTargetClose(t *testing.T) {
	for _, mode := range []string{Echo, Sink, Source} {
		t.Run(mode, func(t *testing.T) {
			tg, err := Start(Config{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			c, err := measure.NewDialer(false).DialContext(loadgentest.Context(t), "tcp", tg.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if mode != Sink {
				buf := make([]byte, 5)
				if _, err := io.ReadFull(c, buf); err != nil {
					t.Fatal(err)
				}
			}
			// Close must end the open connection, not wait for it.
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}
			tg.Close()
			if s := tg.Stats(); s.Conns != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestMixedTarget speaks the mixed target's protocol by hand.
func TestMixedTarget(t *testing.T) {
	tg, err := Start(Config{Mode: Mixed})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()

	bulk, err := net.Dial("tcp", tg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bulk.Close()
	_ = bulk.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := bulk.Write([]byte{MixedBulk}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(bulk, make([]byte, 200_000)); err != nil {
		t.Fatalf("bulk: %v", err)
	}

	ia, err := net.Dial("tcp", tg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close()
	_ = ia.SetDeadline(time.Now().Add(10 * time.Second))
	req := append([]byte{MixedInteractive}, AppendMixedRequest(nil, 70_000, 300)...)
	req = append(req, make([]byte, 300)...)
	for round := range 2 {
		if round == 1 {
			req = req[1:] // the kind goes first only
		}
		if _, err := ia.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(ia, make([]byte, 70_000)); err != nil {
			t.Fatalf("response %d: %v", round, err)
		}
	}
	// Nothing more than asked for: the next read waits.
	_ = ia.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var ne net.Error
	if n, err := ia.Read(make([]byte, 1)); n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("after the responses: %d bytes, %v; want a timeout", n, err)
	}

	// A request over the bounds ends the connection.
	bad, err := net.Dial("tcp", tg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_ = bad.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := bad.Write(append([]byte{MixedInteractive}, AppendMixedRequest(nil, MaxMixedResponse+1, 0)...)); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(bad); len(b) > 0 || err != nil {
		t.Errorf("oversize request: read %d bytes, %v; want a close", len(b), err)
	}
}
