package statuspage

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/internal/testkit/browsertest"
	"github.com/flurrypt/flurry/messages"
)

// screenshotEnv names the file TestBrowser saves a screenshot of a busy
// page to (relative paths are relative to the module root), e.g.
// FLURRY_SCREENSHOT=docs/status-page.png.
const screenshotEnv = "FLURRY_SCREENSHOT"

// TestBrowser loads the page in a real headless chromium: it must load with
// no console output, exception or policy violation, show the counts the
// test recorded, contain no injected markup, and have its stylesheet
// applied (so the Content-Security-Policy allows it).
func TestBrowser(t *testing.T) {
	ctx, problems := browsertest.New(t)
	p := newTestPage(t)
	srv := httptest.NewServer(p) // 127.0.0.1
	defer srv.Close()

	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#available")),
	); err != nil {
		t.Fatalf("load the status page: %v", err)
	}
	for sel, want := range map[string]string{
		"#available-total":                      "7",
		"#available-standalone td:nth-child(5)": "3",
		"#available-unknown td:nth-child(3)":    "1",
		"#hour-matched":                         "16",
		"#hour-timeout":                         "8",
		"#hour-denied":                          "16",
		"#day-matched":                          "16",
		"#day-timeout":                          "8",
		"#day-denied":                           "24",
		"#version":                              "1.2.3 (deadbeef*)",
		"#uptime":                               "1d 2h 3m 4s",
	} {
		if got := strings.TrimSpace(browsertest.Run(t, ctx, sel, chromedp.Text(chromedp.CSS(sel)))); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	if n := browsertest.Run(t, ctx, "count injected elements", chromedp.Evaluate[int](
		`document.querySelectorAll("script, img, iframe, object, embed, [onerror], [onload]").length`)); n != 0 {
		t.Errorf("%d script, image or handler elements in the page", n)
	}
	bridges := browsertest.Run(t, ctx, "bridge cells", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#bridges code")].map(e => e.textContent)`))
	if want := testBridges(); len(bridges) != 4 || bridges[2] != want[1].Fingerprint || bridges[3] != want[1].URL {
		t.Errorf("bridge cells %q: the markup should show as text", bridges)
	}
	types := browsertest.Run(t, ctx, "type rows", chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#available tbody th")].map(e => e.textContent)`))
	if want := append(messages.KnownProxyTypes(), "unknown"); strings.Join(types, ",") != strings.Join(want, ",") {
		t.Errorf("type rows %q, want %q", types, want)
	}
	rects := browsertest.Run(t, ctx, "count bars", chromedp.Evaluate[int](`document.querySelectorAll("#chart-hour rect, #chart-day rect").length`))
	if want := countRects(p.Snapshot()); rects != want || rects == 0 {
		t.Errorf("%d bar segments drawn, want %d", rects, want)
	}
	if fill := browsertest.Run(t, ctx, "bar colour", chromedp.Evaluate[string](
		`getComputedStyle(document.querySelector("rect.d")).fill`)); fill != "rgb(198, 40, 40)" {
		t.Errorf("denied bars are filled %q: the stylesheet was not applied", fill)
	}
	if title := browsertest.Run(t, ctx, "title", chromedp.Title()); title != "Flurry broker status" {
		t.Errorf("title %q", title)
	}
	for _, p := range problems() {
		t.Errorf("browser reported %s", p)
	}

	if path := os.Getenv(screenshotEnv); path != "" {
		saveScreenshot(t, ctx, problems, path)
	}
}

// countRects returns the number of bar segments the page draws for s.
func countRects(s Snapshot) int {
	n := 0
	for _, buckets := range [][]stats.Bucket{s.Stats.LastHour, s.Stats.LastDay} {
		for _, b := range buckets {
			for _, c := range []int{b.Matched, b.Timeout, b.Denied} {
				if c > 0 {
					n++
				}
			}
		}
	}
	return n
}

// saveScreenshot renders a busy day's page and saves a PNG of it to path
// (relative to the module root unless absolute).
func saveScreenshot(t *testing.T, ctx context.Context, problems func() []string, path string) {
	t.Helper()
	if !filepath.IsAbs(path) {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(root, path)
	}
	clock := &fakeClock{t: time.Date(2026, 5, 6, 0, 23, 0, 0, time.UTC)}
	r, err := stats.New(stats.Config{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	busyDay(r, clock)
	p, err := New(Config{
		Stats:   r,
		Version: "v0.1.0 (3f91ed8a)",
		Start:   clock.Now().Add(-(3*24*time.Hour + 5*time.Hour + 17*time.Minute)),
		Bridges: []Bridge{
			{Fingerprint: messages.DefaultBridgeFingerprint, URL: "wss://snowflake.torproject.net/"},
			{Fingerprint: "8838024498816A039FCBBAB14E6F40A0843051FA", URL: "wss://02.snowflake.torproject.net/"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/status"),
		chromedp.WaitVisible(chromedp.CSS("#chart-day")),
	); err != nil {
		t.Fatalf("load the busy page: %v", err)
	}
	png := browsertest.Run(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	for _, p := range problems() {
		t.Errorf("browser reported %s", p)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("saved %s (%d bytes)", path, len(png))
}

// busyDay records a day of made-up but plausible traffic ending at the
// clock's time, which it advances by 24 hours: a daily wave of clients,
// occasional shortages of proxies, and a pool of waiting proxies.
func busyDay(r *stats.Recorder, clock *fakeClock) {
	ip := netip.MustParseAddr("192.0.2.1")
	for i := range 24 * 60 {
		hour := clock.Now().Hour()
		// Busiest in the evening, quietest around dawn.
		wave := max(1, 10-abs(hour-19))
		matched := 3*wave + (i*7)%23
		for range matched {
			r.ClientPoll(ip, messages.NATUnrestricted, stats.MethodHTTP, stats.StatusMatched)
		}
		if i%11 == 0 {
			r.ClientPoll(ip, messages.NATRestricted, stats.MethodAMPCache, stats.StatusTimeout)
		}
		if hour >= 18 && hour <= 21 && i%3 == 0 {
			for range wave {
				r.ClientPoll(ip, messages.NATRestricted, stats.MethodHTTP, stats.StatusDenied)
			}
		}
		clock.Add(time.Minute)
	}
	for _, p := range []struct {
		typ, nat string
		n        int
	}{
		{"standalone", "unrestricted", 41}, {"standalone", "restricted", 17}, {"webext", "restricted", 96},
		{"webext", "unrestricted", 12}, {"badge", "restricted", 23}, {"badge", "unknown", 4},
		{"iptproxy", "unrestricted", 9}, {"bloco", "restricted", 2}, {xss, "unknown", 3},
	} {
		r.AvailableProxies(p.typ, p.nat, p.n)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// moduleRoot returns the directory of the go.mod above the working
// directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}
