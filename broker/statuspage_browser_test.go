package broker_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/testkit/browsertest"
	"github.com/flurrypt/flurry/messages"
)

// TestStatusPageAfterPolls drives polls through a real broker over HTTP (a
// whole rendezvous, proxies that report junk types with markup, a client
// that finds no proxy) and then loads the broker's status page in a real
// headless Chromium: it must show those counts (client counts rounded up
// to a multiple of 8, as every exported client count is), map the junk
// types to "unknown", contain no injected markup and cause no browser
// problem.
func TestStatusPageAfterPolls(t *testing.T) {
	ctx, problems := browsertest.New(t)
	tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold})

	goldenRendezvous(t, tb) // one client matched, one proxy answered
	var polls []<-chan response
	junk := []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, strings.Repeat("x", 300)}
	for i, typ := range junk {
		// By hand: the encoder refuses unknown types, as a real proxy's
		// need not.
		body, err := json.Marshal(map[string]any{"Sid": fmt.Sprint("junk", i), "Version": "1.3", "Type": typ,
			"NAT": messages.NATRestricted, "Clients": 0, "AcceptedRelayPattern": ""})
		if err != nil {
			t.Fatal(err)
		}
		polls = append(polls, async(func() response { return tb.post(t, "/proxy", body) }))
	}
	tb.rec.waitStarted(t, len(junk))
	// A restricted client cannot use the restricted proxies: denied.
	expect(t, "denied client", tb.post(t, "/client", clientPoll(t, sd(t, "offer", "o"), messages.NATRestricted, "")),
		http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))

	if err := chromedp.Do(ctx,
		chromedp.Navigate(tb.srv.URL+"/status"),
		chromedp.WaitVisible(chromedp.CSS("#available")),
	); err != nil {
		t.Fatalf("load the status page: %v", err)
	}
	for sel, want := range map[string]string{
		"#available-total":                   "3",
		"#available-unknown td:nth-child(2)": "3", // restricted NAT (child 1 is the row's th)
		"#available-unknown td:nth-child(5)": "3", // all
		"#hour-matched":                      "8",
		"#hour-timeout":                      "0",
		"#hour-denied":                       "8",
	} {
		if got := strings.TrimSpace(browsertest.Run(t, ctx, sel, chromedp.Text(chromedp.CSS(sel)))); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if n := browsertest.Run(t, ctx, "count injected elements", chromedp.Evaluate[int](
		`document.querySelectorAll("script, img, iframe, object, embed, [onerror], [onload]").length`)); n != 0 {
		t.Errorf("%d script, image or handler elements in the page", n)
	}
	html := browsertest.Run(t, ctx, "page text", chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	for _, typ := range junk {
		if strings.Contains(html, typ) || strings.Contains(html, "alert(1)") {
			t.Errorf("the page carries a proxy's junk type %q", typ)
		}
	}
	for _, p := range problems() {
		t.Errorf("browser reported %s", p)
	}
	tb.Close() // answers the waiting polls
	for _, p := range polls {
		<-p
	}
}
