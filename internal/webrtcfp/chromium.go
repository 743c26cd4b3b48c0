package webrtcfp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/internal/browsertest"
)

// ChromiumFlags let two pages of one headless Chromium connect over
// loopback: loopback candidates allowed, host addresses not hidden behind
// mDNS names.
var ChromiumFlags = []chromedp.ExecAllocatorOption{
	chromedp.Flag("allow-loopback-in-peer-connection", true),
	chromedp.Flag("disable-features", "WebRtcHideLocalIpsWithMdns"),
}

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
// message each way) through a Relay and returns what each page sent. It
// skips (fails under CI=true) when chromium is missing.
func Chromium(t *testing.T) []Datagram {
	t.Helper()
	offerTab, _ := browsertest.New(t, ChromiumFlags...)
	answerTab, cancel := chromedp.NewContext(offerTab)
	t.Cleanup(cancel)
	r := NewRelay(t)

	offer := eval(t, offerTab, "offer", offerJS)
	raw := offer
	offer, err := r.Rewrite(Offerer, offer)
	if err != nil {
		t.Fatalf("chromium offer: %v\n%s", err, raw)
	}
	answer := eval(t, answerTab, "answer", sprintfJSON(answerJS, offer))
	answer, err = r.Rewrite(Answerer, answer)
	if err != nil {
		t.Fatalf("chromium answer: %v", err)
	}
	if got := eval(t, offerTab, "connect", sprintfJSON(connectJS, answer)); got != "echo:ping" {
		t.Fatalf("chromium DataChannel echoed %q", got)
	}
	return r.Datagrams()
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
