package webrtcfp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/internal/testkit/browsertest"
)

// ChromiumFlags let two pages of one headless Chromium see each other's
// host candidates on every interface: addresses not hidden behind mDNS
// names, and camera and microphone permission granted (to fake devices),
// without which Chromium gathers only on the default route's interface.
var ChromiumFlags = []chromedp.ExecAllocatorOption{
	chromedp.Flag("disable-features", "WebRtcHideLocalIpsWithMdns"),
	chromedp.Flag("use-fake-ui-for-media-stream", true),
	chromedp.Flag("use-fake-device-for-media-stream", true),
}

// permitJS asks for (fake) microphone access, which the flags grant.
const permitJS = `(async () => {
	const s = await navigator.mediaDevices.getUserMedia({audio: true});
	s.getTracks().forEach((t) => t.stop());
	return "ok";
})()`

const offerJS = `(async () => {
	const pc = new RTCPeerConnection();
	window.pc = pc;
	const dc = pc.createDataChannel("fp");
	window.dc = dc;
	window.opened = new Promise((res) => { dc.onopen = res; });
	window.echo = new Promise((res) => { dc.onmessage = (e) => res(e.data); });
	await pc.setLocalDescription(await pc.createOffer());
	await new Promise((res) => {
		if (pc.iceGatheringState === "complete") res();
		pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") res(); });
	});
	return pc.localDescription.sdp;
})()`

const answerJS = `(async (offer) => {
	const pc = new RTCPeerConnection();
	window.pc = pc;
	pc.ondatachannel = (e) => { e.channel.onmessage = (m) => e.channel.send("echo:" + m.data); };
	await pc.setRemoteDescription({type: "offer", sdp: offer});
	await pc.setLocalDescription(await pc.createAnswer());
	await new Promise((res) => {
		if (pc.iceGatheringState === "complete") res();
		pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") res(); });
	});
	return pc.localDescription.sdp;
})(%s)`

const connectJS = `(async (answer) => {
	await pc.setRemoteDescription({type: "answer", sdp: answer});
	await opened;
	dc.send("ping");
	return await echo;
})(%s)`

// Chromium connects two pages of a headless Chromium (a DataChannel, one
// message each way) through a Relay, n times (each with two fresh pages),
// and returns what the pages sent each time. It skips (fails under
// CI=true) when chromium or root is missing. Chromium gathers no loopback
// candidate on Linux, so the pages connect over a namespace's veth pair
// (the relay is in the namespace).
func Chromium(t *testing.T, n int) [][]Datagram {
	t.Helper()
	ns := NewNetns(t) // before the browser starts, so it sees the link
	browser, _ := browsertest.New(t, ChromiumFlags...)
	// A page on http://127.0.0.1 is a secure context: getUserMedia works.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><title>webrtcfp</title>"))
	}))
	t.Cleanup(page.Close)
	var out [][]Datagram
	for range n {
		r := NewNetnsRelay(t, ns)
		var tabs [2]context.Context
		for i := range tabs {
			tab, cancel := chromedp.NewContext(browser)
			t.Cleanup(cancel)
			browsertest.Run(t, tab, "open page", chromedp.Navigate(page.URL))
			eval(t, tab, "media permission", permitJS)
			tabs[i] = tab
		}
		raw := eval(t, tabs[Offerer], "offer", offerJS)
		offer, err := r.Rewrite(Offerer, raw)
		if err != nil {
			t.Fatalf("chromium offer: %v\n%s", err, raw)
		}
		answer, err := r.Rewrite(Answerer, eval(t, tabs[Answerer], "answer", sprintfJSON(answerJS, offer)))
		if err != nil {
			t.Fatalf("chromium answer: %v", err)
		}
		if got := eval(t, tabs[Offerer], "connect", sprintfJSON(connectJS, answer)); got != "echo:ping" {
			t.Fatalf("chromium DataChannel echoed %q", got)
		}
		out = append(out, r.Datagrams())
	}
	return out
}

// eval runs a script returning a promise of a string.
func eval(t *testing.T, ctx context.Context, what, js string) string {
	t.Helper()
	return browsertest.Run(t, ctx, what, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
}

// sprintfJSON puts s, as a JavaScript string literal, into format.
func sprintfJSON(format, s string) string {
	b, _ := json.Marshal(s)
	return strings.Replace(format, "%s", string(b), 1)
}
