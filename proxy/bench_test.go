package proxy

import (
	"testing"
)

// BenchmarkClientToRelay measures one 1400-byte message (a KCP packet)
// from a loopback WebRTC client through the proxy to a WebSocket relay.
// Allocations include pion's (SCTP chunking) and gorilla's.
func BenchmarkClientToRelay(b *testing.B) {
	e := startE2E(b, nil)
	_, rwc, rc := e.connect(b, e.relay.url())
	msg := randomBytes(1400)
	done := make(chan error, 1)
	go func() {
		for {
			if _, _, err := rc.ws.ReadMessage(); err != nil {
				done <- err
				return
			}
			done <- nil
		}
	}()
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rwc.Write(msg); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rc.ws.Close()
	e.stop()
}
