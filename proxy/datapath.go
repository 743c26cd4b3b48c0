package proxy

import (
	"io"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// downstreamMessageSize bounds the DataChannel messages the proxy sends.
// Relay messages hold one or two KCP packets (1.4-2.8 KB); SCTP cuts each
// DataChannel message into chunks of sctpChunkPayload bytes ending in a
// short one, and every chunk is a packet of its own: one DTLS record and
// one system call at each end. Sent one by one, such messages cost about a
// fifth more packets than the same bytes in full chunks. A whole number of
// chunks, just under 16 KiB: far below any client's announced maximum
// (Snowflake's and browsers' 64 KiB and more). Snowflake's and Flurry's
// clients read the messages as a byte stream, whatever their boundaries.
const downstreamMessageSize = 14 * sctpChunkPayload

// sctpChunkPayload is the payload of a full SCTP DATA chunk from pion/sctp:
// its MTU of 1 191 bytes less the common and DATA chunk headers (28),
// rounded down to a multiple of 4. Only an optimum: with another value,
// messages end in a short chunk again.
const sctpChunkPayload = 1160

// relayReadBufferSize is the proxy's read buffer on its WebSocket to the
// relay: several relay messages per system call when they arrive faster
// than the DataChannel takes them.
const relayReadBufferSize = 16 << 10

// downstream hands relay→client bytes from the goroutine that reads the
// relay to the one that writes the DataChannel. The writer takes everything
// that arrived while it was busy (the send window full) as one
// message, so that a bulk download goes out in full messages; it never
// waits for more, so a lone message goes out at once.
type downstream struct {
	mu      sync.Mutex
	pending []byte // read, not yet taken; at most downstreamMessageSize
	err     error  // why the reader stopped; returned once pending is empty

	ready chan struct{} // a token: pending or err changed
	room  chan struct{} // a token: the writer emptied pending
}

func newDownstream(buf []byte) *downstream {
	return &downstream{pending: buf[:0], ready: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// put appends b, as much as fits at a time, so that a writer that falls
// behind takes full messages; false if the session stopped first.
func (d *downstream) put(b []byte, s *session) bool {
	for {
		d.mu.Lock()
		n := min(len(b), cap(d.pending)-len(d.pending))
		wasEmpty := len(d.pending) == 0
		d.pending = append(d.pending, b[:n]...)
		d.mu.Unlock()
		if wasEmpty && n > 0 {
			signal(d.ready)
		}
		if b = b[n:]; len(b) == 0 {
			return true
		}
		select {
		case <-d.room:
		case <-s.done:
			return false
		}
	}
}

// finish records why the reader stopped.
func (d *downstream) finish(err error) {
	d.mu.Lock()
	d.err = err
	d.mu.Unlock()
	signal(d.ready)
}

// takeUpTo waits for pending bytes and returns at most limit of them (at
// least one), leaving out (emptied) in their place; the rest stays
// pending. out must hold cap(pending) bytes. Once the reader has stopped
// and nothing is pending, it returns the reader's error.
func (d *downstream) takeUpTo(out []byte, limit int, s *session) ([]byte, error) {
	limit = max(limit, 1)
	for {
		d.mu.Lock()
		if n := len(d.pending); n > limit {
			out = append(out[:0], d.pending[:limit]...)
			d.pending = d.pending[:copy(d.pending, d.pending[limit:])]
			d.mu.Unlock()
			signal(d.room)
			return out, nil
		} else if n > 0 {
			out, d.pending = d.pending, out[:0]
			d.mu.Unlock()
			signal(d.room)
			return out, nil
		}
		err := d.err
		d.mu.Unlock()
		if err != nil {
			return nil, err
		}
		select {
		case <-d.ready:
		case <-s.done:
			return nil, s.err
		}
	}
}

// empty reports whether nothing is pending.
func (d *downstream) empty() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending) == 0
}

// readRelay reads the relay's WebSocket messages into d until the relay
// or the session ends.
func (p *Proxy) readRelay(ws *websocket.Conn, d *downstream, s *session) {
	bp := p.downBufs.Get().(*[]byte)
	defer p.downBufs.Put(bp)
	buf := *bp
	for {
		_, r, err := ws.NextReader() // only text and binary messages
		if err != nil {
			d.finish(err)
			return
		}
		for end := false; !end; {
			n, err := io.ReadFull(r, buf)
			switch {
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				end = true
			case err != nil:
				d.finish(err)
				return
			}
			if n > 0 && !d.put(buf[:n], s) {
				return
			}
		}
	}
}

// maxReadingTime bounds the time a BufferedAmount reading may take to
// count as taken at the time before it.
const maxReadingTime = time.Millisecond

// relayToClient writes what readRelay reads to the DataChannel, as much
// of what is pending as the send window (sendwindow.go) lets in, as one
// message, and otherwise waits for the client to acknowledge more.
// out is the writer's spare buffer, swapped with each batch taken.
func (p *Proxy) relayToClient(d *downstream, out []byte, ch openedChannel, s *session) error {
	w := newSendWindow()
	room := downstreamMessageSize
	for {
		if d.empty() {
			w.appLimited()
		}
		var err error
		out, err = d.takeUpTo(out, room, s)
		if err != nil {
			return err
		}
		if _, err := ch.rwc.Write(out); err != nil {
			return err
		}
		sent := time.Now()
		if s.pacer != nil {
			sent = s.pacer.Next(sent)
		}
		w.wrote(sent, len(out))
		p.m.addToClient(len(out))
		s.moved.Add(1)
		for {
			// A reading that took long (the goroutine descheduled
			// around it) has no trustworthy time: it updates nothing.
			now := time.Now()
			buffered := ch.dc.BufferedAmount()
			if time.Since(now) < maxReadingTime {
				var held uint64
				if s.pacer != nil {
					held = s.pacer.Held(now)
				}
				w.acked(now, buffered, held)
			}
			win := uint64(w.window(now))
			if s.pacer != nil {
				s.pacer.SetRate(w.pacingRate(now))
			}
			// Write again once a batch fits: a full message, or a
			// quarter of a small window.
			batch := min(uint64(downstreamMessageSize), max(win/4, sctpChunkPayload))
			if buffered+batch <= win {
				room = int(min(win-buffered, downstreamMessageSize))
				break
			}
			// Wake when the client has acknowledged enough for a batch.
			ch.dc.SetBufferedAmountLowThreshold(win - batch)
			if ch.dc.BufferedAmount() <= win-batch {
				continue
			}
			select {
			case <-s.lowWater:
				w.woke(time.Unix(0, s.drainedAt.Load()))
			case <-s.done:
				return s.err
			}
		}
	}
}
