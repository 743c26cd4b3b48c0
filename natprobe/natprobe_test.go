package natprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/common/webrtcnet"
)

// snowflakeProbeBody builds the body a Snowflake v2.14.1 proxy POSTs: a
// ProxyPollResponse as Go's encoding/json writes Snowflake's struct (all
// keys, struct order), with the offer of a loopback pion peer that has a
// DataChannel labelled "test".
func snowflakeProbeBody(t testing.TB) (*webrtc.PeerConnection, chan struct{}, []byte) {
	t.Helper()
	var se webrtc.SettingEngine
	webrtcnet.LoopbackOnly(&se, nil)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.GracefulClose() })
	dc, err := pc.CreateDataChannel("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{}, 1)
	dc.OnOpen(func() { opened <- struct{}{} })
	local, err := webrtcnet.LocalDescription(context.Background(), pc, webrtc.SDPTypeOffer, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	offerJSON, _ := json.Marshal(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: local.SDP})
	body, _ := json.Marshal(struct {
		Status   string
		Offer    string
		NAT      string
		NextPoll int64
		RelayURL string
	}{"client match", string(offerJSON), "", 0, ""})
	return pc, opened, body
}

func newTestServer(t testing.TB, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return s, hs
}

// TestSnowflakeProbeExchange: a probe as a Snowflake proxy sends it gets
// a ProxyAnswerRequest with Sid "stub-sid", and the DataChannel opens.
func TestSnowflakeProbeExchange(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	_, hs := newTestServer(t, Config{LoopbackOnly: true})
	pc, opened, body := snowflakeProbeBody(t)
	resp, err := hs.Client().Post(hs.URL+Path, "", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
	// Decode as Snowflake's proxy does: Go field names as keys.
	var ans struct{ Version, Sid, Answer string }
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	if ans.Version != "1.3" || ans.Sid != "stub-sid" || !strings.Contains(ans.Answer, "a=candidate") {
		t.Fatalf("answer %+v", ans)
	}
	var desc webrtc.SessionDescription
	if err := json.Unmarshal([]byte(ans.Answer), &desc); err != nil || desc.Type != webrtc.SDPTypeAnswer {
		t.Fatalf("answer description %q: %v", ans.Answer, err)
	}
	if err := pc.SetRemoteDescription(desc); err != nil {
		t.Fatal(err)
	}
	select {
	case <-opened:
	case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("data channel never opened")
	}
	pc.GracefulClose()
	hs.Close()
}

func TestBadProbes(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	_, hs := newTestServer(t, Config{LoopbackOnly: true})
	tests := []struct {
		name   string
		method string
		body   string
		status int
	}{
		{"garbage", http.MethodPost, "<html>", http.StatusBadRequest},
		{"empty", http.MethodPost, "", http.StatusBadRequest},
		{"no match (Snowflake crashes here, item 26)", http.MethodPost, `{"Status":"no match","Offer":"","NAT":"","NextPoll":0,"RelayURL":""}`, http.StatusBadRequest},
		{"match without offer", http.MethodPost, `{"Status":"client match","Offer":"","NAT":""}`, http.StatusBadRequest},
		{"answer instead of offer", http.MethodPost, `{"Status":"client match","Offer":"{\"type\":\"answer\",\"sdp\":\"v=0\\r\\n\"}"}`, http.StatusBadRequest},
		{"offer with bad SDP", http.MethodPost, `{"Status":"client match","Offer":"{\"type\":\"offer\",\"sdp\":\"nonsense\"}"}`, http.StatusBadRequest},
		{"oversize", http.MethodPost, `{"Status":"client match","Offer":"` + strings.Repeat("A", 100001) + `"}`, http.StatusRequestEntityTooLarge},
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"OPTIONS", http.MethodOptions, "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, hs.URL+Path, strings.NewReader(tt.body))
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("status %d (CORS %q), want %d", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"), tt.status)
			}
		})
	}
	resp, err := hs.Client().Get(hs.URL + "/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/other: %d", resp.StatusCode)
	}
	hs.Close()
}

// TestProbeLimitAndClose: beyond MaxConcurrent probes the server says 503;
// Close ends waiting probes and later probes get 503.
func TestProbeLimitAndClose(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	s, hs := newTestServer(t, Config{LoopbackOnly: true, MaxConcurrent: 1})
	post := func(body []byte) int {
		resp, err := hs.Client().Post(hs.URL+Path, "", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	_, _, body1 := snowflakeProbeBody(t)
	_, _, body2 := snowflakeProbeBody(t)
	if st := post(body1); st != http.StatusOK {
		t.Fatalf("first probe: %d", st)
	}
	// The first probe now waits for its DataChannel (we never answer).
	if st := post(body2); st != http.StatusServiceUnavailable {
		t.Errorf("second concurrent probe: %d, want 503", st)
	}
	s.Close() // ends the waiting probe and waits for it
	s.Close() // idempotent
	if st := post(body2); st != http.StatusServiceUnavailable {
		t.Errorf("probe after Close: %d, want 503", st)
	}
	hs.Close()
}

func TestNewConfig(t *testing.T) {
	if _, err := New(Config{STUNURLs: []string{"turn:x"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Error("accepted a TURN URL")
	}
	if _, err := New(Config{OpenTimeout: -1}); !errors.Is(err, ErrInvalidConfig) {
		t.Error("accepted a negative timeout")
	}
	s, err := New(Config{})
	if err != nil || s.cfg.GatherTimeout != DefaultGatherTimeout || s.cfg.MaxConcurrent != DefaultMaxConcurrent {
		t.Errorf("defaults: %+v, %v", s.cfg, err)
	}
}

// TestProbeLimitPerAddress: one address holds at most MaxPerAddress
// probes; another address still gets one while the first is at its cap.
func TestProbeLimitPerAddress(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	s, hs := newTestServer(t, Config{LoopbackOnly: true, MaxConcurrent: 8, MaxPerAddress: 2})
	from := func(local string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	post := func(c *http.Client) int {
		_, _, body := snowflakeProbeBody(t)
		resp, err := c.Post(hs.URL+Path, "", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	a, b := from("127.0.0.1"), from("127.0.0.2")
	defer a.CloseIdleConnections()
	defer b.CloseIdleConnections()
	for i := range 2 {
		if st := post(a); st != http.StatusOK {
			t.Fatalf("probe %d from 127.0.0.1: %d", i+1, st)
		}
	}
	if st := post(a); st != http.StatusServiceUnavailable {
		t.Errorf("third probe from 127.0.0.1: %d, want 503", st)
	}
	if st := post(b); st != http.StatusOK {
		t.Errorf("probe from 127.0.0.2 while 127.0.0.1 is at its cap: %d, want 200", st)
	}
	s.Close()
	hs.Close()
}

func TestPeerOf(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"192.0.2.1:443", "192.0.2.1"},
		{"[::ffff:192.0.2.1]:443", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::"},
		{"[fe80::1%eth0]:443", "fe80::"},
		{"nonsense", "invalid IP"},
	}
	for _, tt := range tests {
		if got := peerOf(tt.remote).String(); got != tt.want {
			t.Errorf("peerOf(%q) = %s, want %s", tt.remote, got, tt.want)
		}
	}
}
