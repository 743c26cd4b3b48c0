package turbotunnel

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// kcpSegment builds one KCP segment with the given header fields.
func kcpSegment(conv uint32, cmd byte, wnd uint16, sn, una uint32, data string) []byte {
	b := make([]byte, KCPHeaderLen, KCPHeaderLen+len(data))
	binary.LittleEndian.PutUint32(b[0:4], conv)
	b[4] = cmd
	binary.LittleEndian.PutUint16(b[6:8], wnd)
	binary.LittleEndian.PutUint32(b[12:16], sn)
	binary.LittleEndian.PutUint32(b[16:20], una)
	binary.LittleEndian.PutUint32(b[20:24], uint32(len(data)))
	return append(b, data...)
}

func TestNextKCPSegment(t *testing.T) {
	first := kcpSegment(7, KCPCmdPush, 128, 3, 9, "data")
	second := kcpSegment(7, KCPCmdAck, 128, 0, 9, "")
	seg, rest, ok := NextKCPSegment(append(append([]byte(nil), first...), second...))
	if !ok || !bytes.Equal(seg, first) || !bytes.Equal(rest, second) {
		t.Fatalf("first split: %x, rest %x, %v", seg, rest, ok)
	}
	if seg.Conv() != 7 || seg.Cmd() != KCPCmdPush || seg.Wnd() != 128 || seg.SN() != 3 || seg.Una() != 9 || string(seg.Data()) != "data" {
		t.Errorf("fields: conv %d cmd %d wnd %d sn %d una %d data %q", seg.Conv(), seg.Cmd(), seg.Wnd(), seg.SN(), seg.Una(), seg.Data())
	}
	if seg, rest, ok = NextKCPSegment(rest); !ok || seg.Cmd() != KCPCmdAck || len(seg.Data()) != 0 || len(rest) != 0 {
		t.Fatalf("second split: %x, rest %x, %v", seg, rest, ok)
	}
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"short header", first[:KCPHeaderLen-1]},
		{"data cut short", first[:len(first)-1]},
		{"length past any slice", binary.LittleEndian.AppendUint32(make([]byte, 20), 0xffffffff)},
	} {
		if seg, rest, ok := NextKCPSegment(tc.p); ok || seg != nil || rest != nil {
			t.Errorf("%s: %x, %x, %v; want nothing", tc.name, seg, rest, ok)
		}
	}
}

// FuzzNextKCPSegment checks that any input splits into a whole segment
// and the rest of the input, or into nothing.
func FuzzNextKCPSegment(f *testing.F) {
	f.Add(kcpSegment(1, KCPCmdPush, 32, 0, 0, "x"))
	f.Add(append(kcpSegment(1, KCPCmdAck, 32, 0, 0, ""), 1, 2, 3))
	f.Fuzz(func(t *testing.T, p []byte) {
		seg, rest, ok := NextKCPSegment(p)
		if !ok {
			return
		}
		if len(seg) < KCPHeaderLen || len(seg)+len(rest) != len(p) || !bytes.Equal(append(append([]byte(nil), seg...), rest...), p) {
			t.Fatalf("split %x into %x and %x", p, seg, rest)
		}
		if len(seg.Data()) != int(binary.LittleEndian.Uint32(p[20:24])) {
			t.Fatalf("data of %d bytes, header says %d", len(seg.Data()), binary.LittleEndian.Uint32(p[20:24]))
		}
	})
}
