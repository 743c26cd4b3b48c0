package covertdtls

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	dtls3 "github.com/pion/dtls/v3"
	dtls3selfsign "github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/dtls/v4"
	"github.com/pion/dtls/v4/pkg/crypto/selfsign"
	"github.com/pion/dtls/v4/pkg/protocol"
	"github.com/pion/dtls/v4/pkg/protocol/handshake"
	"github.com/theodorsm/covert-dtls/pkg/fingerprints"
)

// hookCase is one ClientHello hook with the options pion's WebRTC layer
// gives pion/dtls for it (Apply's SettingEngine settings).
type hookCase struct {
	name   string
	hook   func(handshake.MessageClientHello) handshake.Message
	curves bool // chromiumCurves
	dtls12 bool // the client's maximum is DTLS 1.2
}

func hookCases(t testing.TB) []hookCase {
	t.Helper()
	k, err := newHelloKey()
	if err != nil {
		t.Fatal(err)
	}
	cases := []hookCase{
		{name: "pion"},
		{name: "mimic", hook: k.chromium, curves: true},
		{name: "randomize", hook: k.randomized},
	}
	pool := replayPool()
	if len(pool) < 30 {
		t.Fatalf("%d recorded hellos load, want at least 30", len(pool))
	}
	for i, r := range pool {
		cases = append(cases, hookCase{name: fmt.Sprintf("replay%02d", i), hook: r.replay, curves: true})
	}
	for _, f := range []fingerprints.ClientHelloFingerprint{fingerprints.Mozilla_Firefox_125_0_1, fingerprints.Chrome_linux_138_0_7204_183} {
		r, err := parseFingerprint(string(f))
		if err != nil || r.dtls13() {
			t.Fatalf("%.20s: %v, DTLS 1.3 %v", f, err, r.dtls13())
		}
		cases = append(cases, hookCase{name: "replay12 " + string(f[:12]), hook: r.replay, curves: true, dtls12: true})
	}
	return cases
}

func udpPair(t testing.TB) (a, b *net.UDPConn) {
	t.Helper()
	a, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	b, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

func clientOpts(t testing.TB, c hookCase) []dtls.ClientOption {
	cert, err := selfsign.GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	opts := []dtls.ClientOption{
		dtls.WithCertificates(cert), dtls.WithInsecureSkipVerify(true),
		dtls.WithSRTPProtectionProfiles(srtpProfiles...),
		dtls.WithExtendedMasterSecret(dtls.RequireExtendedMasterSecret),
	}
	if c.hook != nil {
		opts = append(opts, dtls.WithClientHelloMessageHook(c.hook))
	}
	if c.curves {
		opts = append(opts, dtls.WithEllipticCurves(chromiumCurves...))
	}
	if c.dtls12 {
		opts = append(opts, dtls.WithMaxVersion(protocol.Version1_2))
	}
	return opts
}

// TestHooksAgainstPion runs each hook (every recorded hello included)
// against a pion/dtls v4 server configured as pion/webrtc v5 configures
// it, and checks the version: DTLS 1.3 wherever the hello offers it.
func TestHooksAgainstPion(t *testing.T) {
	for _, c := range hookCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for range 3 {
				a, b := udpPair(t)
				cert, err := selfsign.GenerateSelfSigned()
				if err != nil {
					t.Fatal(err)
				}
				srvErr := make(chan error, 1)
				// The server holds its end open until the client is done:
				// a close_notify sent while the client still waits for the
				// server's last flight (or its ACK) fails the client's
				// handshake, as it should.
				clientDone := make(chan struct{})
				var srvVersion protocol.Version
				go func() {
					s, err := dtls.Server(b, a.LocalAddr(), dtls.WithCertificates(cert),
						dtls.WithSRTPProtectionProfiles(srtpProfiles...), dtls.WithInsecureSkipVerifyHello(true),
						dtls.WithClientAuth(dtls.RequireAnyClientCert), dtls.WithInsecureSkipVerify(true),
						dtls.WithServerHelloMessageHook(chromiumServerHello))
					if err == nil {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						err = s.HandshakeContext(ctx)
						cancel()
						if st, ok := s.ConnectionState(); ok {
							srvVersion = st.NegotiatedVersion()
						}
						defer func() { <-clientDone; _ = s.Close() }()
					}
					srvErr <- err
				}()
				cl, err := dtls.Client(a, b.LocalAddr(), clientOpts(t, c)...)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = cl.HandshakeContext(ctx)
				cancel()
				st, _ := cl.ConnectionState()
				err2 := <-srvErr
				close(clientDone)
				_ = cl.Close()
				if err != nil || err2 != nil {
					t.Fatalf("client: %v; server: %v", err, err2)
				}
				if st.NegotiatedVersion() != srvVersion {
					t.Fatalf("client %v, server %v", st.NegotiatedVersion(), srvVersion)
				}
				if !c.dtls12 {
					if v := st.NegotiatedVersion(); v != protocol.Version1_3 {
						t.Fatalf("negotiated %v, want DTLS 1.3", v)
					}
				}
			}
		})
	}
}

// TestHooksAgainstDTLS12 runs each hook against pion/dtls v3 (DTLS 1.2
// only, Snowflake v2.14.1's DTLS) as server: every hello must fall back to
// DTLS 1.2.
func TestHooksAgainstDTLS12(t *testing.T) {
	for _, c := range hookCases(t) {
		t.Run(c.name, func(t *testing.T) {
			for range 3 {
				a, b := udpPair(t)
				cert, err := dtls3selfsign.GenerateSelfSigned()
				if err != nil {
					t.Fatal(err)
				}
				srvErr := make(chan error, 1)
				clientDone := make(chan struct{}) // as in TestHooksAgainstPion
				go func() {
					s, err := dtls3.ServerWithOptions(b, a.LocalAddr(),
						dtls3.WithCertificates(cert), dtls3.WithInsecureSkipVerify(true),
						dtls3.WithClientAuth(dtls3.RequireAnyClientCert), dtls3.WithInsecureSkipVerifyHello(true),
						dtls3.WithSRTPProtectionProfiles(dtls3.SRTP_AEAD_AES_256_GCM, dtls3.SRTP_AEAD_AES_128_GCM, dtls3.SRTP_AES128_CM_HMAC_SHA1_80), // pion/webrtc v4's
						dtls3.WithExtendedMasterSecret(dtls3.RequireExtendedMasterSecret))
					if err == nil {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						err = s.HandshakeContext(ctx)
						cancel()
						defer func() { <-clientDone; _ = s.Close() }()
					}
					srvErr <- err
				}()
				cl, err := dtls.Client(a, b.LocalAddr(), clientOpts(t, c)...)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = cl.HandshakeContext(ctx)
				cancel()
				st, _ := cl.ConnectionState()
				err2 := <-srvErr // before the client's close_notify can overtake its Finished
				close(clientDone)
				_ = cl.Close()
				if err != nil || err2 != nil {
					t.Fatalf("client: %v; server: %v", err, err2)
				}
				if v := st.NegotiatedVersion(); v != protocol.Version1_2 {
					t.Fatalf("negotiated %v, want DTLS 1.2", v)
				}
			}
		})
	}
}

// TestPionDowngradeSentinel documents why a replayed DTLS 1.2 hello holds
// its peer to DTLS 1.2 (installHook): pion/dtls v4.0.1's client
// (internal/flight/flight12/flight3handler.go, validateServerHello12Version)
// checks the downgrade sentinel whenever its configured maximum is DTLS
// 1.3, even when the hello it sent (through the hook) offered DTLS 1.2
// only, so it refuses a DTLS 1.3-capable server's correct DTLS 1.2 answer.
// If this test starts to fail, pion checks the hello it sent and the
// DTLS 1.2 cap can go.
func TestPionDowngradeSentinel(t *testing.T) {
	r, err := parseFingerprint(string(fingerprints.Mozilla_Firefox_125_0_1))
	if err != nil {
		t.Fatal(err)
	}
	a, b := udpPair(t)
	cert, err := selfsign.GenerateSelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := dtls.Server(b, a.LocalAddr(), dtls.WithCertificates(cert),
			dtls.WithSRTPProtectionProfiles(srtpProfiles...), dtls.WithInsecureSkipVerifyHello(true))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.HandshakeContext(ctx)
			cancel()
			_ = s.Close()
		}
	}()
	cl, err := dtls.Client(a, b.LocalAddr(), clientOpts(t, hookCase{hook: r.replay, curves: true})...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err = cl.HandshakeContext(ctx)
	cancel()
	_ = cl.Close()
	<-done
	if err == nil || !strings.Contains(err.Error(), "downgrade sentinel") {
		t.Fatalf("handshake: %v; want pion v4.0.1's downgrade sentinel error", err)
	}
}
