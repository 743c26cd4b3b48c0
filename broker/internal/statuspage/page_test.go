package statuspage

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/messages"
)

// fakeClock is a settable clock shared by the Recorder and the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const xss = "<script>alert(1)</script>"

// testBridges includes markup the page must escape.
func testBridges() []Bridge {
	return []Bridge{
		{Fingerprint: messages.DefaultBridgeFingerprint, URL: "wss://snowflake.torproject.net/"},
		{Fingerprint: "8838024498816A039FCBBAB14E6F40A0843051FA", URL: `wss://02.example/"><img src=x onerror=alert(2)>` + xss},
	}
}

// driveEvents records a fixed scenario: 7 proxies waiting (one with a
// markup type, counted as unknown), and over the last two hours 9 matched,
// 2 timed-out and 17 denied clients, 3 of the denials more than an hour
// ago.
func driveEvents(tb testing.TB, r *stats.Recorder, clock *fakeClock) {
	tb.Helper()
	ip := netip.MustParseAddr("192.0.2.1")
	for _, p := range []struct{ typ, nat string }{
		{"standalone", "unrestricted"}, {"standalone", "unrestricted"}, {"standalone", "restricted"},
		{"webext", "restricted"}, {"badge", "unknown"}, {"bloco", "unrestricted"}, {xss, "unrestricted"},
	} {
		typ := messages.NormalizeProxyType(p.typ)
		r.ProxyPoll(ip, p.typ, p.nat, true)
		r.AvailableProxies(typ, p.nat, +1)
		// A buggy caller passing the raw type is mapped all the same.
		r.AvailableProxies(p.typ, p.nat, +1)
		r.AvailableProxies(typ, p.nat, -1)
	}
	for range 3 {
		r.ClientPoll(ip, messages.NATRestricted, stats.MethodHTTP, stats.StatusDenied)
	}
	clock.Add(61 * time.Minute)
	for i := range 9 {
		r.ClientPoll(ip, messages.NATUnrestricted, stats.MethodAMPCache, stats.StatusMatched)
		if i < 2 {
			r.ClientPoll(ip, messages.NATUnknown, stats.MethodHTTP, stats.StatusTimeout)
		}
		clock.Add(time.Minute)
	}
	for range 14 {
		r.ClientPoll(ip, messages.NATRestricted, stats.MethodHTTP, stats.StatusDenied)
	}
}

// newTestPage returns a page over a Recorder with a fake clock, after
// driveEvents.
func newTestPage(tb testing.TB) *Page {
	tb.Helper()
	clock := &fakeClock{t: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	r, err := stats.New(stats.Config{Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	driveEvents(tb, r, clock) // ends at 08:18:09
	start := clock.Now().Add(-(26*time.Hour + 3*time.Minute + 4*time.Second))
	p, err := New(Config{Stats: r, Bridges: testBridges(), Version: "1.2.3 (deadbeef*)", Start: start})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func get(tb testing.TB, h http.Handler, method string) *httptest.ResponseRecorder {
	tb.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, "/", nil))
	return w
}

func TestPage(t *testing.T) {
	p := newTestPage(t)
	w := get(t, p, http.MethodGet)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /: %d", w.Code)
	}
	body := w.Body.String()
	for _, want := range []string{
		`<span id="available-total">7</span>`,
		`<tr id="available-standalone"><th scope="row">standalone</th><td class="n">1</td><td class="n">2</td><td class="n">0</td><td class="n">3</td></tr>`,
		`<tr id="available-unknown"><th scope="row">unknown</th><td class="n">0</td><td class="n">1</td><td class="n">0</td><td class="n">1</td></tr>`,
		`<tfoot><tr><th scope="row">all</th><td class="n">2</td><td class="n">4</td><td class="n">1</td><td class="n">7</td></tr></tfoot>`,
		`<td class="n" id="hour-matched">16</td><td class="n" id="hour-timeout">8</td><td class="n" id="hour-denied">16</td>`,
		`<td class="n" id="day-matched">16</td><td class="n" id="day-timeout">8</td><td class="n" id="day-denied">24</td>`,
		`<span id="version">1.2.3 (deadbeef*)</span>`,
		`<span id="uptime">1d 2h 3m 4s</span>`,
		`<meta http-equiv="refresh" content="60">`,
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
		`<style>` + styleSheet + `</style>`,
		`<title>08:18 UTC: 0 matched, 0 timed out, 16 denied</title>`,
		`<title>08:17 UTC: 8 matched, 0 timed out, 0 denied</title>`,
		`<title>07:00 UTC: 0 matched, 0 timed out, 8 denied</title>`,
		`<title>08:00 UTC: 16 matched, 8 timed out, 16 denied</title>`,
		`<code>wss://02.example/&#34;&gt;&lt;img src=x onerror=alert(2)&gt;&lt;script&gt;alert(1)&lt;/script&gt;</code>`,
		`<time id="now" datetime="2026-05-06T08:18:09Z">2026-05-06 08:18:09 UTC</time>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// No markup from the input, nothing loaded from anywhere.
	for _, bad := range []string{"<script", "<img", "src=\"", "https://", "url("} {
		if strings.Contains(body, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n := strings.Count(body, "href="); n != 1 || !strings.Contains(body, `<link rel="icon" href="data:,">`) {
		t.Errorf("%d href attributes, want only the data: favicon", n)
	}
	h := w.Header()
	sum := sha256.Sum256([]byte(styleSheet))
	for k, want := range map[string]string{
		"Content-Type": "text/html; charset=utf-8",
		"Content-Security-Policy": "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
			"'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
		"X-Content-Type-Options": "nosniff",
		"X-Frame-Options":        "DENY",
		"Referrer-Policy":        "no-referrer",
		"Cache-Control":          "no-store",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}

	if w := get(t, p, http.MethodHead); w.Code != http.StatusOK {
		t.Errorf("HEAD: %d", w.Code)
	}
	if w := get(t, p, http.MethodPost); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

func TestRenderNoBridges(t *testing.T) {
	var b strings.Builder
	tmpl, err := parseTemplate()
	if err != nil {
		t.Fatal(err)
	}
	if err := tmpl.Execute(&b, newView(Snapshot{Refresh: time.Minute})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<p id="bridges">No bridges configured.</p>`) {
		t.Error("no empty bridge list note")
	}
}

func TestNewErrors(t *testing.T) {
	r, err := stats.New(stats.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		cfg  Config
		want error
	}{
		{"no stats", Config{}, ErrInvalidConfig},
		{"refresh too short", Config{Stats: r, Refresh: time.Second}, ErrInvalidConfig},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, tt.want) {
				t.Errorf("New: %v, want %v", err, tt.want)
			}
		})
	}
	p, err := New(Config{Stats: r})
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Snapshot(); s.Version == "" || s.Refresh != DefaultRefresh {
		t.Errorf("defaults: version %q refresh %v", s.Version, s.Refresh)
	}
}

func TestFormatUptime(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{1500 * time.Millisecond, "1s"},
		{61 * time.Second, "1m 1s"},
		{time.Hour, "1h 0m 0s"},
		{49*time.Hour + 5*time.Second, "2d 1h 0m 5s"},
	} {
		if got := formatUptime(tt.d); got != tt.want {
			t.Errorf("formatUptime(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestChart(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	buckets := make([]stats.Bucket, 24)
	for i := range buckets {
		buckets[i].Start = start.Add(time.Duration(i) * time.Hour)
	}
	buckets[3] = stats.Bucket{Start: buckets[3].Start, Matched: 64, Timeout: 8, Denied: 8}
	buckets[5] = stats.Bucket{Start: buckets[5].Start, Denied: 8}
	c := newChart("c", "caption", buckets, "15:04", 6)
	if len(c.Bars) != 24 || len(c.Ticks) != 4 || c.MaxLabel != "80" {
		t.Fatalf("%d bars, %d ticks, max %q", len(c.Bars), len(c.Ticks), c.MaxLabel)
	}
	segs := c.Bars[3].Segs
	if len(segs) != 3 {
		t.Fatalf("bar 3 has %d segments", len(segs))
	}
	// The tallest bar fills the plot exactly, stacked bottom-up.
	if segs[0].Y+segs[0].H != chartBase || segs[2].Y != chartTop || segs[1].Y+segs[1].H != segs[0].Y {
		t.Errorf("segments %+v", segs)
	}
	if h := segs[0].H; h != 112 { // 64/80 of 140
		t.Errorf("matched segment height %d, want 112", h)
	}
	if got := c.Bars[5].Segs; len(got) != 1 || got[0].Class != "d" || got[0].H != 14 {
		t.Errorf("bar 5 %+v", got)
	}
	if len(c.Bars[0].Segs) != 0 || c.Ticks[1].Label != "06:00" {
		t.Errorf("bar 0 %+v, tick 1 %+v", c.Bars[0], c.Ticks[1])
	}
	// An empty history draws empty bars.
	empty := newChart("c", "caption", make([]stats.Bucket, 60), "15:04", 15)
	if empty.MaxLabel != "0" || len(empty.Bars) != 60 || len(empty.Bars[7].Segs) != 0 {
		t.Errorf("empty chart %+v", empty)
	}
}
