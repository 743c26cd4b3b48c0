package sockbuf_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/sockbuf"
	"github.com/flurrypt/flurry/common/webrtcnet"
)

// BenchmarkDataChannel measures the WebRTC stack alone (pion's ICE, DTLS
// and SCTP, both ends in this process, on loopback): one ordered, reliable
// DataChannel carrying messages of each size one way as fast as it can,
// with plain sockets and with Net's (larger buffers, batched I/O). It is the
// ceiling of what a chain through pion can carry per CPU on this machine
// (docs/performance.md).
func BenchmarkDataChannel(b *testing.B) {
	for _, size := range []int{1200, 4096, 16 << 10, 64 << 10} {
		for _, buffered := range []bool{false, true} {
			name := fmt.Sprintf("msg=%d/sockbuf=%v", size, buffered)
			b.Run(name, func(b *testing.B) {
				send, recv := dataChannelPair(b, buffered)
				msg := make([]byte, size)
				total := int64(size) * int64(b.N)
				done := make(chan error, 1)
				go func() {
					buf := make([]byte, 64<<10)
					var got int64
					for got < total {
						n, err := recv.Read(buf)
						if err != nil {
							done <- err
							return
						}
						got += int64(n)
					}
					done <- nil
				}()
				b.SetBytes(int64(size))
				b.ResetTimer()
				for range b.N {
					if _, err := send.Write(msg); err != nil {
						b.Fatal(err)
					}
				}
				select {
				case err := <-done:
					if err != nil {
						b.Fatal(err)
					}
				case <-time.After(5 * time.Minute):
					b.Fatal("receiver stalled")
				}
				b.StopTimer()
			})
		}
	}
}

// dataChannelPair connects two pion peers on loopback and returns the
// offerer's detached DataChannel (send) and the answerer's (recv).
func dataChannelPair(tb testing.TB, buffered bool) (send, recv datachannel.ReadWriteCloser) {
	tb.Helper()
	api := func() *webrtc.API {
		var se webrtc.SettingEngine
		se.DetachDataChannels()
		se.EnableDataChannelBlockWrite(true)
		webrtcnet.LoopbackOnly(&se, nil)
		if buffered {
			n, err := sockbuf.Net(nil)
			if err != nil {
				tb.Fatal(err)
			}
			se.SetNet(n)
		}
		return webrtc.NewAPI(webrtc.WithSettingEngine(se))
	}
	offerer, err := api().NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		tb.Fatal(err)
	}
	answerer, err := api().NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = offerer.Close()
		_ = answerer.Close()
	})
	sendCh := make(chan datachannel.ReadWriteCloser, 1)
	recvCh := make(chan datachannel.ReadWriteCloser, 1)
	dc, err := offerer.CreateDataChannel("bench", nil)
	if err != nil {
		tb.Fatal(err)
	}
	dc.OnOpen(func() {
		raw, err := dc.Detach()
		if err == nil {
			sendCh <- raw
		}
	})
	answerer.OnDataChannel(func(d *webrtc.DataChannel) {
		d.OnOpen(func() {
			raw, err := d.Detach()
			if err == nil {
				recvCh <- raw
			}
		})
	})
	local, err := webrtcnet.LocalDescription(context.Background(), offerer, webrtc.SDPTypeOffer, time.Minute, false)
	if err != nil {
		tb.Fatal(err)
	}
	if err := answerer.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: local.SDP}); err != nil {
		tb.Fatal(err)
	}
	if local, err = webrtcnet.LocalDescription(context.Background(), answerer, webrtc.SDPTypeAnswer, time.Minute, false); err != nil {
		tb.Fatal(err)
	}
	if err := offerer.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: local.SDP}); err != nil {
		tb.Fatal(err)
	}
	timeout := time.After(30 * time.Second)
	for _, ch := range []chan datachannel.ReadWriteCloser{sendCh, recvCh} {
		select {
		case c := <-ch:
			if ch == sendCh {
				send = c
			} else {
				recv = c
			}
		case <-timeout:
			tb.Fatal("DataChannel did not open")
		}
	}
	tb.Cleanup(func() {
		_ = send.Close()
		_ = recv.Close()
	})
	return send, recv
}
