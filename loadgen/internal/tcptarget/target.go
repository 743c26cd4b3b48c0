package tcptarget

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// Target behaviours (Config.Mode).
const (
	Echo   = "echo"   // write back everything read
	Sink   = "sink"   // read and discard
	Source = "source" // write an endless stream, ignore input
	// Random reads an 8-byte big-endian length n, writes the first
	// n bytes of the pseudo-random stream of randomStream (the same on
	// every connection, so that a reader can check them with
	// RandomStreamDigest) and closes.
	Random = "random"
	// Mixed serves the users of the many-user runs: a connection's
	// first byte says whether it downloads or asks and waits
	// (target_mixed.go).
	Mixed = "mixed"
)

// Config configures Start.
type Config struct {
	// Addr is the TCP address to listen on. Default 127.0.0.1:0 (a free
	// port; see Target.Addr).
	Addr string
	// Mode is Echo (default), Sink, Source, Random
	// or Mixed.
	Mode string
	// AllowNonLoopback allows listening on an address other than loopback.
	AllowNonLoopback bool
}

// Stats counts a target's traffic.
type Stats struct {
	Conns    int64 `json:"conns"`
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
}

// Target is a TCP echo, sink or source on loopback: the forward target of a
// relay under test (flurry-relay -forward), or the far end of a chain.
type Target struct {
	ln   net.Listener
	mode string

	conns, in, out atomic.Int64

	mu      sync.Mutex
	open    map[net.Conn]struct{} // guarded by mu
	closed  bool                  // guarded by mu
	wg      sync.WaitGroup
	onClose sync.Once
}

// Start listens on cfg.Addr and serves every connection until Close.
func Start(cfg Config) (*Target, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Mode == "" {
		cfg.Mode = Echo
	}
	switch cfg.Mode {
	case Echo, Sink, Source, Random, Mixed:
	default:
		return nil, fmt.Errorf("%w: target mode %q (want echo, sink, source, random or mixed)", measure.ErrInvalidConfig, cfg.Mode)
	}
	if err := measure.CheckHostPort(cfg.Addr, cfg.AllowNonLoopback); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	t := &Target{ln: ln, mode: cfg.Mode, open: make(map[net.Conn]struct{})}
	t.wg.Go(t.accept)
	return t, nil
}

// Addr is the address the target listens on (give it to the relay's
// -forward).
func (t *Target) Addr() string { return t.ln.Addr().String() }

// Stats returns the traffic so far.
func (t *Target) Stats() Stats {
	return Stats{Conns: t.conns.Load(), BytesIn: t.in.Load(), BytesOut: t.out.Load()}
}

// Close stops listening, closes every connection and waits for them.
// Calling it again does nothing.
func (t *Target) Close() error {
	var err error
	t.onClose.Do(func() {
		err = t.ln.Close()
		t.mu.Lock()
		t.closed = true
		for c := range t.open {
			c.Close()
		}
		t.mu.Unlock()
	})
	t.wg.Wait()
	return err
}

func (t *Target) accept() {
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return // closed (or out of file descriptors: the run will say so)
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			c.Close()
			return
		}
		t.open[c] = struct{}{}
		t.mu.Unlock()
		t.conns.Add(1)
		t.wg.Go(func() { t.serve(c) })
	}
}

// serve runs one connection in this goroutine only: echo reads then writes
// back in turn, so a connection never has two goroutines.
func (t *Target) serve(c net.Conn) {
	defer func() {
		c.Close()
		t.mu.Lock()
		delete(t.open, c)
		t.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	switch t.mode {
	case Mixed:
		t.serveMixed(c, buf)
	case Random:
		var req [8]byte
		if _, err := io.ReadFull(c, req[:]); err != nil {
			return
		}
		n, _ := io.CopyN(c, randomStream(), int64(binary.BigEndian.Uint64(req[:])))
		t.out.Add(n)
	case Source:
		for i := range buf {
			buf[i] = byte(i)
		}
		t.wg.Go(func() { _, _ = io.Copy(io.Discard, c) }) // ends when c is closed
		for {
			n, err := c.Write(buf)
			t.out.Add(int64(n))
			if err != nil {
				return
			}
		}
	default:
		for {
			n, err := c.Read(buf)
			if n > 0 {
				t.in.Add(int64(n))
				if t.mode == Echo {
					m, werr := c.Write(buf[:n])
					t.out.Add(int64(m))
					if werr != nil {
						return
					}
				}
			}
			if err != nil {
				return
			}
		}
	}
}

// serveMixed serves one connection of a Mixed target with buf as its
// buffer; it returns when the connection ends or breaks the protocol.
func (t *Target) serveMixed(c net.Conn, buf []byte) {
	var kind [1]byte
	if _, err := io.ReadFull(c, kind[:]); err != nil {
		return
	}
	t.in.Add(1)
	for i := range buf {
		buf[i] = byte(i)
	}
	switch kind[0] {
	case MixedBulk:
		for {
			n, err := c.Write(buf)
			t.out.Add(int64(n))
			if err != nil {
				return
			}
		}
	case MixedInteractive:
		var hdr [MixedHeaderLen]byte
		for {
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			response := int64(binary.BigEndian.Uint32(hdr[:4]))
			request := int64(binary.BigEndian.Uint32(hdr[4:]))
			if response > MaxMixedResponse || request > MaxMixedRequest {
				return
			}
			n, err := io.CopyN(io.Discard, c, request)
			t.in.Add(MixedHeaderLen + n)
			if err != nil {
				return
			}
			for response > 0 {
				m, err := c.Write(buf[:min(int64(len(buf)), response)])
				t.out.Add(int64(m))
				if err != nil {
					return
				}
				response -= int64(m)
			}
		}
	}
}
