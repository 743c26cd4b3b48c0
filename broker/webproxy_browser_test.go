package broker_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/testkit/browsertest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/messages"
)

// badgeBudget is what embedding the badge may transfer, in all.
const badgeBudget = 100 << 10

// TestWebProxyBadge builds the browser proxy (webproxy/, with node) for a
// broker that serves it with -webproxy, embeds the badge in an iframe of
// another site's page in headless Chromium, switches it on, and checks
// that the broker sees a poll of type "badge", that the badge says it is
// on, that everything it loaded came to at most 100 KiB on the wire, and
// that the browser reported no problem.
func TestWebProxyBadge(t *testing.T) {
	node := testenv.LookPath(t, "node", "nodejs")
	dir := t.TempDir()
	tb := newTestBroker(t, broker.Config{WebProxyDir: dir, ProxyHold: longHold})
	out := filepath.Join(t.TempDir(), "webproxy")
	if b, err := exec.Command(node, filepath.Join("..", "webproxy", "build.mjs"), "-out", out,
		"-broker", tb.srv.URL+"/", "-relay-pattern", "^127.0.0.1:*$", "-allow-private-relay", "-allow-non-tls-relay",
		"-stun", "").CombinedOutput(); err != nil {
		t.Fatalf("build the browser proxy: %v\n%s", err, b)
	}
	// The broker reads its directory at each request: the build goes there now.
	if err := exec.Command("cp", "-r", filepath.Join(out, "web")+"/.", dir).Run(); err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>a site</title><iframe src="%s/webproxy/badge.html" width="320" height="120"></iframe>`, tb.srv.URL)
	}))
	t.Cleanup(site.Close)

	ctx, problems := browsertest.New(t)
	var mu sync.Mutex
	urls := map[network.RequestID]string{}
	var transferred float64
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			urls[ev.RequestID] = ev.Request.URL
		case *network.EventLoadingFinished:
			if strings.Contains(urls[ev.RequestID], "/webproxy/") {
				transferred += ev.EncodedDataLength
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	browsertest.Run(t, ctx, "open the site", chromedp.Navigate(site.URL))
	frames := browsertest.Run(t, ctx, "find the badge", chromedp.Nodes(chromedp.CSS("iframe")))
	inBadge := chromedp.FromNode(frames[0])
	browsertest.Run(t, ctx, "wait for the badge", chromedp.WaitVisible(chromedp.CSS("#enabled"), inBadge))
	if got := browsertest.Run(t, ctx, "read the badge", chromedp.Text(chromedp.CSS("#headline"), inBadge)); got != "Off" {
		t.Errorf("before it is switched on the badge says %q, want Off", got)
	}
	browsertest.Run(t, ctx, "switch the badge on", chromedp.Click(chromedp.CSS("#enabled"), inBadge))

	select {
	case p := <-tb.rec.started:
		if p.Type != messages.ProxyTypeBadge || !p.RelayPattern {
			t.Errorf("the badge polled as %+v, want type badge with a relay pattern", p)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the badge never polled the broker")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := browsertest.Run(t, ctx, "read the badge", chromedp.Text(chromedp.CSS("#headline"), inBadge))
		if got == "On: waiting for someone to help" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the switched-on badge says %q", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	n := transferred
	mu.Unlock()
	t.Logf("the badge transferred %.0f bytes", n)
	if n == 0 || n > badgeBudget {
		t.Errorf("the badge transferred %.0f bytes, want 1 to %d", n, badgeBudget)
	}
	for _, p := range problems() {
		// The proxy's own log lines (info and debug) are not problems.
		if strings.HasPrefix(p, `console.info: "flurry-webproxy:`) || strings.HasPrefix(p, `console.debug: "flurry-webproxy:`) {
			continue
		}
		t.Errorf("browser reported %s", p)
	}
}
