package multipath

// MaxBatch is the most packets a writer hands a BatchCarrier at once.
const MaxBatch = 8

// BatchCarrier is a Carrier that can send several packets at once, for
// example as one DataChannel message: a turbotunnel relay reads the
// encapsulated packets as a byte stream whatever the message boundaries,
// and one message costs the WebRTC stack much less than eight.
type BatchCarrier interface {
	Carrier
	// WritePackets sends ps in order; it may block while the carrier is
	// busy. It must not keep ps or its packets.
	WritePackets(ps [][]byte) error
}

// writeQueued sends p through m's carrier together with the packets that
// are already waiting in the send queue (at most MaxBatch in all, if the
// carrier is a BatchCarrier), and returns the pooled buffers. batch is
// scratch space, returned for reuse.
func (c *Conn) writeQueued(m *member, p []byte, batch [][]byte) ([][]byte, error) {
	batch = append(batch[:0], p)
	bc, ok := m.car.(BatchCarrier)
	if ok {
	more:
		for len(batch) < MaxBatch {
			select {
			case q := <-c.send:
				batch = append(batch, q)
			default:
				break more
			}
		}
	}
	expects := 0
	if c.watch.Timeout > 0 {
		for _, q := range batch {
			if c.watch.ExpectsReply(q) {
				expects++
			}
		}
	}
	var err error
	if ok && len(batch) > 1 {
		err = bc.WritePackets(batch)
	} else {
		err = m.car.WritePacket(p)
	}
	for i, q := range batch {
		c.putBuf(q)
		batch[i] = nil
	}
	if err != nil {
		return batch[:0], err
	}
	c.sent.Add(uint64(len(batch)))
	for range expects {
		c.sentExpectingReply(m)
	}
	return batch[:0], nil
}
