package censor

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/dtls/v3/pkg/protocol/handshake"
	"github.com/theodorsm/covert-dtls/pkg/fingerprints"
	"github.com/theodorsm/covert-dtls/pkg/mimicry"
	"github.com/theodorsm/covert-dtls/pkg/randomize"

	"github.com/flurrypt/flurry/internal/testkit/certtest"
)

// helloVerifyRequest returns a DTLS datagram holding a HelloVerifyRequest
// with cookie (RFC 6347 section 4.2.1).
func helloVerifyRequest(cookie []byte) []byte {
	body := append([]byte{0xfe, 0xff, byte(len(cookie))}, cookie...)
	n := len(body)
	hs := append([]byte{3, 0, 0, byte(n), 0, 0, 0, 0, 0, 0, 0, byte(n)}, body...)
	rec := []byte{contentHandshake, 0xfe, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(len(hs))}
	return append(rec, hs...)
}

// captureHellos starts a real pion/dtls client towards a UDP socket on
// loopback and returns the first datagram it sends (its ClientHello) and
// the ClientHello it resends after a HelloVerifyRequest with a cookie.
func captureHellos(t testing.TB, opts ...dtls.ClientOption) (first, second []byte) {
	t.Helper()
	peer, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]dtls.ClientOption{dtls.WithInsecureSkipVerify(true)}, opts...)
	client, err := dtls.ClientWithOptions(conn, peer.LocalAddr(), opts...)
	if err != nil {
		conn.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = client.HandshakeContext(ctx)
	}()
	defer func() {
		cancel()
		client.Close()
		<-done
	}()
	if err := peer.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<16)
	n, addr, err := peer.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	first = append([]byte(nil), buf[:n]...)
	cookie := []byte("flurry-lab-cookie-0123456789abcd")
	if _, err := peer.WriteTo(helloVerifyRequest(cookie), addr); err != nil {
		t.Fatal(err)
	}
	for {
		n, _, err := peer.ReadFrom(buf)
		if err != nil {
			t.Fatal(err)
		}
		if h, ok := ClientHelloOf(buf[:n]); ok && len(h.Cookie) > 0 {
			return first, append([]byte(nil), buf[:n]...)
		}
	}
}

// webrtcOpts are the client options pion/webrtc v4 gives pion/dtls that
// change its ClientHello: a certificate and the default SRTP profiles.
func webrtcOpts(t testing.TB) []dtls.ClientOption {
	return []dtls.ClientOption{
		dtls.WithCertificates(certtest.New(t).TLS), // as pion/webrtc makes
		dtls.WithSRTPProtectionProfiles(dtls.SRTP_AEAD_AES_256_GCM, dtls.SRTP_AEAD_AES_128_GCM, dtls.SRTP_AES128_CM_HMAC_SHA1_80),
	}
}

// mimicOpts replays covert-dtls's first browser fingerprint, as
// Snowflake's mimic mode does.
func mimicOpts(t testing.TB) []dtls.ClientOption {
	fps := fingerprints.GetClientHelloFingerprints()
	if len(fps) == 0 {
		t.Fatal("covert-dtls has no fingerprints")
	}
	hook := func(ch handshake.MessageClientHello) handshake.Message {
		m := &mimicry.MimickedClientHello{}
		if err := m.LoadFingerprint(fps[len(fps)-1]); err != nil {
			return &ch
		}
		return m.Hook(ch)
	}
	return append(webrtcOpts(t), dtls.WithClientHelloMessageHook(hook))
}

// randomizeOpts shuffles the hello as covert-dtls's randomize mode does.
func randomizeOpts(t testing.TB) []dtls.ClientOption {
	hook := func(ch handshake.MessageClientHello) handshake.Message {
		m := &randomize.RandomizedMessageClientHello{RandomALPN: true}
		return m.Hook(ch)
	}
	return append(webrtcOpts(t), dtls.WithClientHelloMessageHook(hook))
}

func TestDefaultBlockJA4(t *testing.T) {
	tests := []struct {
		name string
		opts []dtls.ClientOption
		want string
	}{
		{"pion default", nil, ja4PionDefault},
		{"pion webrtc", webrtcOpts(t), ja4PionWebRTC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, second := captureHellos(t, tt.opts...)
			for i, d := range [][]byte{first, second} {
				got, ok := JA4OfDatagram(d)
				if !ok || got != tt.want {
					t.Errorf("hello %d (cookie %v): JA4 %q, %v; want %q", i+1, i == 1, got, ok, tt.want)
				}
			}
		})
	}
}
