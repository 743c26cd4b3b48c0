package multipath

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// batchCarrier is a pipeCarrier that also takes batches, each delivered on
// batches as one slice of copies.
type batchCarrier struct {
	*pipeCarrier
	batches chan [][]byte
}

func (b *batchCarrier) WritePackets(ps [][]byte) error {
	cp := make([][]byte, len(ps))
	for i, p := range ps {
		cp[i] = append([]byte(nil), p...)
	}
	select {
	case b.batches <- cp:
		return nil
	case <-b.closed:
		return ErrConnClosed
	}
}

// TestBatchCarrierGetsQueuedPackets queues more packets than one batch
// holds before a BatchCarrier joins: it must receive all of them, in order,
// in batches of at most MaxBatch, and every packet must count as sent.
func TestBatchCarrierGetsQueuedPackets(t *testing.T) {
	c := New(nil, nil, ReplyWatch{}, 0)
	defer c.Close()
	const n = MaxBatch + 3
	for i := range n {
		if _, err := c.WriteTo(fmt.Appendf(nil, "packet %d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	car := &batchCarrier{pipeCarrier: newPipeCarrier(), batches: make(chan [][]byte, n)}
	if _, err := c.Add(car); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	deadline := time.After(hangGuard)
	for len(got) < n {
		select {
		case b := <-car.batches:
			if len(b) < 2 || len(b) > MaxBatch {
				t.Errorf("batch of %d packets, want 2 to %d", len(b), MaxBatch)
			}
			got = append(got, b...)
		case p := <-car.out: // a packet that found the queue empty behind it
			got = append(got, p)
		case <-deadline:
			t.Fatalf("got %d of %d packets", len(got), n)
		}
	}
	for i, p := range got {
		if want := fmt.Appendf(nil, "packet %d", i); !bytes.Equal(p, want) {
			t.Errorf("packet %d is %q, want %q", i, p, want)
		}
	}
	// The writer counts a batch once WritePackets has returned.
	for c.Stats().PacketsSent != n {
		select {
		case <-deadline:
			t.Fatalf("PacketsSent = %d, want %d", c.Stats().PacketsSent, n)
		case <-time.After(time.Millisecond):
		}
	}
}
