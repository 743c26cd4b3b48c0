package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Result is the outcome of a TCPReference download.
type Result struct {
	// Bytes is the number of bytes received.
	Bytes int64
	// TimeToFirstByte runs from the start of the dial to the first byte.
	TimeToFirstByte time.Duration
	// Elapsed runs from the start of the dial to the last byte.
	Elapsed time.Duration
	// Stats are the box's counts during the download.
	Stats Stats
}

// MBps is the download's rate in megabytes (10^6 bytes) per second.
func (r Result) MBps() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Elapsed.Seconds() / 1e6
}

// String formats the result on one line.
func (r Result) String() string {
	return fmt.Sprintf("%d bytes in %s: %.2f MB/s, first byte after %s, dropped up %d down %d",
		r.Bytes, r.Elapsed.Round(time.Millisecond), r.MBps(), r.TimeToFirstByte.Round(time.Microsecond),
		r.Stats.Up.Dropped(), r.Stats.Down.Dropped())
}

// referencePort is the port of the TCPReference server.
const referencePort = 7070

// TCPReference measures a plain TCP download through the box: a server on
// the outside's first address sends size bytes to a client on the client
// side, which reads them all. It is the reference Flurry's chains are
// compared with on the same path. If ctx ends first, the error comes with
// what arrived by then (Bytes, TimeToFirstByte, Elapsed and Stats).
func TCPReference(ctx context.Context, lab *Lab, size int64) (Result, error) {
	if size <= 0 {
		return Result{}, fmt.Errorf("tcp reference: size %d <= 0", size)
	}
	var ln net.Listener
	addr := netip.AddrPortFrom(lab.OutsideAddr(0), referencePort)
	if err := lab.Do(Outside, func() error {
		var err error
		var lc net.ListenConfig
		ln, err = lc.Listen(ctx, "tcp", addr.String())
		return err
	}); err != nil {
		return Result{}, fmt.Errorf("tcp reference: listen: %w", err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()

	var wg sync.WaitGroup
	defer wg.Wait()
	serverErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		serverErr <- serveZeros(ctx, ln, size)
	}()

	before := lab.Stats()
	start := time.Now()
	var conn net.Conn
	if err := lab.Do(Client, func() error {
		var err error
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr.String())
		return err
	}); err != nil {
		ln.Close()
		return Result{}, fmt.Errorf("tcp reference: dial: %w", err)
	}
	defer conn.Close()
	stopConn := context.AfterFunc(ctx, func() { conn.Close() })
	defer stopConn()

	var res Result
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 && res.Bytes == 0 {
			res.TimeToFirstByte = time.Since(start)
		}
		res.Bytes += int64(n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			res.Elapsed = time.Since(start)
			res.Stats = lab.Stats().Sub(before)
			return res, fmt.Errorf("tcp reference: read after %d bytes: %w", res.Bytes, errors.Join(ctx.Err(), err))
		}
	}
	res.Elapsed = time.Since(start)
	res.Stats = lab.Stats().Sub(before)
	if err := <-serverErr; err != nil {
		return Result{}, fmt.Errorf("tcp reference: server: %w", err)
	}
	if res.Bytes != size {
		return Result{}, fmt.Errorf("tcp reference: got %d bytes of %d", res.Bytes, size)
	}
	return res, nil
}

// serveZeros accepts one connection on ln and sends it size zero bytes.
func serveZeros(ctx context.Context, ln net.Listener, size int64) error {
	c, err := ln.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	buf := make([]byte, 64<<10)
	for left := size; left > 0; {
		n := int64(len(buf))
		if left < n {
			n = left
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}
