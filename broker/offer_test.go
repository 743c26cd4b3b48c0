package broker

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/messages"
)

// pionAnswers reports whether a pion answerer, set up as Flurry's proxy
// is (data channels, loopback only, no mDNS), takes sdpText as the remote
// offer and creates an answer. Neither starts ICE: nothing is sent.
func pionAnswers(t testing.TB, sdpText string) error {
	t.Helper()
	var se webrtc.SettingEngine
	se.DetachDataChannels()
	webrtcnet.LoopbackOnly(&se, nil)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sdpText}); err != nil {
		return err
	}
	_, err = pc.CreateAnswer(nil)
	return err
}

// realOffer is the SDP of a pion client's offer (testdata/sdp-offer.json).
func realOffer(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/sdp-offer.json")
	if err != nil {
		t.Fatal(err)
	}
	d, err := messages.DecodeSessionDescription(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return d.SDP
}

func encodeOffer(t testing.TB, typ, sdpText string) string {
	t.Helper()
	s, err := messages.SessionDescription{Type: typ, SDP: sdpText}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCheckOffer checks the offers the broker refuses, and that pion can
// answer those it accepts. The broker is stricter than pion's
// SetRemoteDescription on some (RFC 8839's ICE password length, the
// fingerprint's digest): browsers refuse those, and DTLS would fail.
func TestCheckOffer(t *testing.T) {
	good := realOffer(t)
	cut := func(line string) string { return strings.Replace(good, line+"\r\n", "", 1) }
	tests := []struct {
		name string
		typ  string
		sdp  string
		want error
	}{
		{"pion offer", "offer", good, nil},
		{"no candidates (trickle)", "offer", cut("a=candidate:2878742611 1 udp 2130706431 127.0.0.1 44161 typ host ufrag YOnMbdqrylXCBgky") +
			"", nil},
		{"session-level ICE", "offer", strings.Replace(strings.Replace(cut("a=ice-ufrag:YOnMbdqrylXCBgky"), "a=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\n", "", 1),
			"a=msid-semantic", "a=ice-ufrag:YOnMbdqrylXCBgky\r\na=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\na=msid-semantic", 1), nil},
		{"junk", "offer", "x", errOfferNoData},
		{"bad syntax", "offer", "v=0\r\no=broken\r\n", errOfferSyntax},
		{"answer type", "answer", good, errOfferType},
		{"no media", "offer", "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\na=fingerprint:sha-256 " + strings.Repeat("AB:", 31) + "AB\r\n", errOfferNoData},
		{"audio only", "offer", strings.Replace(good, "m=application 9 UDP/DTLS/SCTP webrtc-datachannel", "m=audio 9 UDP/TLS/RTP/SAVPF 111", 1), errOfferNoData},
		{"no ufrag", "offer", cut("a=ice-ufrag:YOnMbdqrylXCBgky"), errOfferICE},
		{"no pwd", "offer", cut("a=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw"), errOfferICE},
		{"short pwd", "offer", strings.Replace(good, "a=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw", "a=ice-pwd:short", 1), errOfferICE},
		{"no fingerprint", "offer", cut("a=fingerprint:sha-256 E6:19:09:28:58:5F:E3:26:C7:18:13:B6:08:8D:49:E9:72:10:E7:5F:09:DB:B4:CD:51:71:56:D3:14:22:05:9B"), errOfferFingerprint},
		{"bad fingerprint", "offer", strings.Replace(good, "sha-256 E6:19", "sha-256 ZZ:19", 1), errOfferFingerprint},
		{"short fingerprint", "offer", strings.Replace(good, "sha-256 E6:19:", "sha-256 ", 1), errOfferFingerprint},
		{"only junk candidates", "offer", strings.ReplaceAll(good, "a=candidate:2878742611 ", "a=candidate:junk"), errOfferCandidates},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkOffer(encodeOffer(t, tt.typ, tt.sdp))
			if !errors.Is(err, tt.want) || (tt.want != nil && !errors.Is(err, messages.ErrInvalidSessionDescription)) {
				t.Fatalf("checkOffer = %v, want %v", err, tt.want)
			}
			if err != nil {
				return
			}
			if pionErr := pionAnswers(t, tt.sdp); pionErr != nil {
				t.Errorf("broker accepts an offer pion cannot answer: %v", pionErr)
			}
		})
	}
}

// FuzzCheckOffer feeds checkOffer arbitrary offers: it must never panic,
// its error text must be one of the fixed ones, and pion must be able to
// answer every offer it accepts.
func FuzzCheckOffer(f *testing.F) {
	good := realOffer(f)
	f.Add(good)
	f.Add(strings.Replace(good, "a=ice-pwd:", "a=ice-pwd:x", 1))
	f.Add("v=0\r\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, sdpText string) {
		s, err := messages.SessionDescription{Type: "offer", SDP: sdpText}.Encode()
		if err != nil {
			return
		}
		_, err = checkOffer(s)
		if err != nil {
			if strings.Contains(err.Error(), sdpText) && len(sdpText) > 8 {
				t.Fatalf("error %q repeats the offer", err)
			}
			return
		}
		if pionErr := pionAnswers(t, sdpText); pionErr != nil {
			t.Fatalf("broker accepts an offer pion cannot answer: %v", pionErr)
		}
	})
}
