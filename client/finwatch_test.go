package client

import (
	"encoding/binary"
	"testing"
)

// TestFinWatchScan finds the relay's FIN for the stream however the frame
// stream is cut, and no other frame's.
func TestFinWatchScan(t *testing.T) {
	frame := func(cmd byte, sid uint32, payload int) []byte {
		f := make([]byte, smuxHeaderLen+payload)
		f[0] = 2
		f[1] = cmd
		binary.LittleEndian.PutUint16(f[2:], uint16(payload))
		binary.LittleEndian.PutUint32(f[4:], sid)
		for i := smuxHeaderLen; i < len(f); i++ {
			f[i] = smuxCmdFIN // payload bytes that look like a FIN header
		}
		return f
	}
	const psh, upd, nop = 2, 4, 3
	var frames []byte
	frames = append(frames, frame(psh, 3, 1000)...)
	frames = append(frames, frame(smuxCmdFIN, 1, 0)...) // another stream's
	frames = append(frames, frame(upd, 3, 8)...)
	frames = append(frames, frame(nop, 0, 0)...)
	frames = append(frames, frame(smuxCmdFIN, 3, 0)...) // last

	for _, cut := range []int{1, 3, 7, 8, 9, 100, len(frames)} {
		var c finWatchConn
		c.sid.Store(3)
		for off := 0; off < len(frames); off += cut {
			end := min(off+cut, len(frames))
			c.scan(frames[off:end])
			if end < len(frames) && c.fin.Load() {
				t.Fatalf("cut %d: FIN seen after %d of %d bytes", cut, end, len(frames))
			}
		}
		if !c.fin.Load() {
			t.Errorf("cut %d: the stream's FIN not seen", cut)
		}
	}
}
