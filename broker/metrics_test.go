package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/common/geoip"
	"github.com/flurrypt/flurry/messages"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Test geoip files: 127.0.0.0/8 is AA and 198.51.100.0/24 FR (IPv4 in
// tor's decimal format); ::1 is V6.
const (
	testGeoIPv4 = "# test database\n2130706432,2147483647,AA\n3325256704,3325256959,FR\n"
	testGeoIPv6 = "::1,::1,V6\n"
)

// openGeoIP writes the given geoip files and opens them; it returns the
// database and the IPv4 file's path.
func openGeoIP(t testing.TB, v4, v6 string) (*geoip.DB, string) {
	t.Helper()
	p4 := writeFile(t, "geoip", v4)
	p6 := writeFile(t, "geoip6", v6)
	db, err := geoip.Open(p4, p6)
	if err != nil {
		t.Fatalf("geoip.Open: %v", err)
	}
	return db, p4
}

// metrics is a parsed Prometheus exposition: series (see series) to value.
// A histogram appears as its name_count and name_sum series.
type metrics map[string]float64

// series names a series: the metric name and its labels sorted by name.
func series(name string, labels ...string) string {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+labels[i+1])
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// parseExposition parses the Prometheus text format.
func parseExposition(t testing.TB, body []byte) metrics {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /prometheus: %v", err)
	}
	out := metrics{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch {
			case m.GetCounter() != nil:
				out[series(name, labels...)] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[series(name, labels...)] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[series(name+"_count", labels...)] = float64(m.GetHistogram().GetSampleCount())
				out[series(name+"_sum", labels...)] = m.GetHistogram().GetSampleSum()
			case m.GetUntyped() != nil:
				out[series(name, labels...)] = m.GetUntyped().GetValue()
			default:
				out[series(name, labels...)] = 0 // summaries: presence only
			}
		}
	}
	return out
}

// scrape fetches and parses the broker's /prometheus from its operator
// handler, returning the raw body too.
func (tb *testBroker) scrape(t testing.TB) (metrics, []byte) {
	t.Helper()
	body := tb.prometheus(t)
	return parseExposition(t, body), body
}

// prometheus returns the body of GET /prometheus from the broker's
// operator handler (the operator listener's).
func (tb *testBroker) prometheus(t testing.TB) []byte {
	t.Helper()
	w := httptest.NewRecorder()
	tb.OperatorHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/prometheus", nil))
	if w.Code != http.StatusOK {
		t.Fatalf("GET /prometheus = %d %q", w.Code, w.Body)
	}
	return w.Body.Bytes()
}

// flurrySeries returns the flurry_broker_ series of m, sorted.
func (m metrics) flurrySeries() []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, "flurry_broker_") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// labelValues returns the distinct values of label in the series of name.
func (m metrics) labelValues(name, label string) []string {
	var out []string
	for k := range m {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		for pair := range strings.SplitSeq(strings.TrimSuffix(strings.TrimPrefix(k, name+"{"), "}"), ",") {
			if v, ok := strings.CutPrefix(pair, label+"="); ok && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkMetrics fails for every series in want whose value differs.
func checkMetrics(t testing.TB, got metrics, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// TestStatsOfARendezvous drives a real rendezvous and a proxy calling itself
// "<script>alert(1)</script>" through the Handler and checks /prometheus,
// /debug and the status page.
func TestStatsOfARendezvous(t *testing.T) {
	db, _ := openGeoIP(t, testGeoIPv4, testGeoIPv6)
	tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold, GeoIP: db, Version: "v9.9-test"})

	proxyRes := async(func() response { return tb.post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")) })
	tb.rec.waitStarted(t, 1)
	clientRes := async(func() response { return tb.post(t, "/client", vector(t, "client-poll-request-1.0.txt")) })
	expect(t, "proxy poll", <-proxyRes, http.StatusOK, vector(t, "proxy-poll-response-match.json"))

	// Matched but not answered: Snowflake's /debug still counts the proxy
	// (idToSnowflake); the gauge of waiting proxies does not.
	expect(t, "/debug while matched", tb.do(t, http.MethodGet, "/debug", nil, nil), http.StatusOK,
		[]byte("current snowflakes available: 1\n\tstandalone proxies: 1\n\tunknown proxies: 0\nNAT Types available:\n\trestricted: 0\n\tunrestricted: 1\n\tunknown: 0"))
	m, _ := tb.scrape(t)
	checkMetrics(t, m, map[string]float64{series("flurry_broker_available_proxies", "type", "standalone", "nat", "unrestricted"): 0})

	expect(t, "answer", tb.post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
	expect(t, "client", <-clientRes, http.StatusOK, vector(t, "client-poll-response-answer.json"))
	expect(t, "/debug after the answer", tb.do(t, http.MethodGet, "/debug", nil, nil), http.StatusOK,
		[]byte("current snowflakes available: 0\n\tunknown proxies: 0\nNAT Types available:\n\trestricted: 0\n\tunrestricted: 0\n\tunknown: 0"))

	// A proxy with a hostile type waits: it is "unknown" everywhere.
	script := `{"Sid":"scriptproxy","Version":"1.3","Type":"<script>alert(1)</script>","NAT":"restricted","Clients":0,"AcceptedRelayPattern":""}`
	scriptRes := async(func() response { return tb.post(t, "/proxy", []byte(script)) })
	tb.rec.waitStarted(t, 1)
	defer func() {
		tb.Close()
		expect(t, "script proxy after Shutdown", <-scriptRes, http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
	}()

	debug := tb.do(t, http.MethodGet, "/debug", nil, nil)
	expect(t, "/debug with the script proxy", debug, http.StatusOK,
		[]byte("current snowflakes available: 1\n\tunknown proxies: 1\nNAT Types available:\n\trestricted: 1\n\tunrestricted: 0\n\tunknown: 0"))
	if ct := debug.header.Get("Content-Type"); ct != "text/plain; charset=utf-8" {
		t.Errorf("/debug Content-Type = %q", ct)
	}

	m, raw := tb.scrape(t)
	if bytes.Contains(raw, []byte("<script")) || bytes.Contains(raw, []byte("alert(")) {
		t.Errorf("/prometheus carries the proxy's type:\n%s", raw)
	}
	checkMetrics(t, m, map[string]float64{
		series("flurry_broker_proxy_polls_total", "nat", "unrestricted", "type", "standalone", "status", "matched"):                      8,
		series("flurry_broker_proxy_answers_total", "type", "standalone", "status", "success"):                                           8,
		series("flurry_broker_client_polls_total", "nat", "unrestricted", "status", "matched", "rendezvous_method", "http", "cc", "AA"):  8,
		series("flurry_broker_proxy_ips_total", "type", "standalone", "nat", "unrestricted", "cc", "AA"):                                 8,
		series("flurry_broker_proxy_ips_total", "type", "unknown", "nat", "restricted", "cc", "AA"):                                      8,
		series("flurry_broker_proxy_relay_pattern_polls_total", "nat", "unrestricted", "type", "standalone", "relay_pattern", "present"): 8,
		series("flurry_broker_proxy_relay_pattern_polls_total", "nat", "restricted", "type", "unknown", "relay_pattern", "present"):      8,
		series("flurry_broker_available_proxies", "type", "unknown", "nat", "restricted"):                                                1,
		series("flurry_broker_available_proxies", "type", "standalone", "nat", "unrestricted"):                                           0,
		series("flurry_broker_request_duration_seconds_count", "endpoint", "proxy"):                                                      8,
		series("flurry_broker_request_duration_seconds_count", "endpoint", "client"):                                                     8,
		series("flurry_broker_request_duration_seconds_count", "endpoint", "answer"):                                                     8,
		series("flurry_broker_request_duration_seconds_count", "endpoint", "debug"):                                                      8,
	})
	// Every count is rounded up to a multiple of 8; only the gauge is exact.
	for _, k := range m.flurrySeries() {
		if strings.HasPrefix(k, "flurry_broker_available_proxies") || strings.Contains(k, "_sum{") {
			continue
		}
		if v := m[k]; v != float64(int64(v)/8*8) {
			t.Errorf("%s = %v, not a multiple of 8", k, v)
		}
	}
	// The broker's own registry also holds the Go runtime and process
	// collectors.
	for _, k := range []string{"go_goroutines{}", "process_cpu_seconds_total{}"} {
		if _, ok := m[k]; !ok {
			t.Errorf("/prometheus has no %s", k)
		}
	}
	if got := m.labelValues("flurry_broker_proxy_ips_total", "type"); !slices.Equal(got, []string{"standalone", "unknown"}) {
		t.Errorf("proxy types = %v", got)
	}

	for _, path := range []string{"/", "/status"} {
		page := tb.do(t, http.MethodGet, path, nil, nil)
		if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") {
			t.Fatalf("GET %s = %d %s", path, page.status, page.header.Get("Content-Type"))
		}
		if !strings.Contains(page.header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("GET %s: Content-Security-Policy = %q", path, page.header.Get("Content-Security-Policy"))
		}
		body := string(page.body)
		for _, want := range []string{
			`<span id="version">v9.9-test</span>`,
			`<span id="available-total">1</span>`,
			`<tr id="available-unknown"><th scope="row">unknown</th><td class="n">1</td><td class="n">0</td><td class="n">0</td><td class="n">1</td></tr>`,
			`<td class="n" id="hour-matched">8</td>`,
			`<td class="n" id="day-matched">8</td>`,
			"<code>2B280B23E1107BB62ABFC40DDCC8824814F80A72</code>",
			"<code>wss://relay.example.org/</code>",
			`<span id="uptime">`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("GET %s: page lacks %s", path, want)
			}
		}
		if strings.Contains(body, "alert(1)") || strings.Contains(body, "<script") {
			t.Errorf("GET %s: the proxy's type reached the page", path)
		}
	}
}

// TestJunkDoesNotGrowSeries sends thousands of requests whose proxy types,
// NAT types and bodies are junk: after a first pass has created every
// series such requests can, the set of series does not change.
func TestJunkDoesNotGrowSeries(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: time.Millisecond, DisableRateLimits: true})
	nats := []string{"", "restricted", "unrestricted"}
	junk := func(i int) (string, []byte) {
		switch i % 4 {
		case 0: // valid poll, junk type
			return "/proxy", fmt.Appendf(nil, `{"Sid":"junk%d","Version":"1.3","Type":"<b>junk-%d</b>\"%c","NAT":%q,"AcceptedRelayPattern":""}`, i, i, rune('a'+i%26), nats[(i/4)%3])
		case 1: // junk NAT
			return "/proxy", fmt.Appendf(nil, `{"Sid":"junk%d","Version":"1.3","Type":"t%d","NAT":"nat-%d<i>"}`, i, i, i)
		case 2: // junk client
			return "/client", fmt.Appendf(nil, "1.0\n{\"offer\":\"x%d\",\"nat\":\"<%d>\"}", i, i)
		}
		return "/answer", fmt.Appendf(nil, `{"Version":"1.3","Sid":"<s%d>","Answer":"a=candidate %d"}`, i, i)
	}
	send := func(i int) {
		path, body := junk(i)
		if got := tb.post(t, path, body); got.status >= 500 {
			t.Errorf("%s %q: %d", path, body, got.status)
		}
	}
	for i := range 12 { // every kind with every NAT
		send(i)
	}
	tb.scrape(t) // its own duration series
	before, _ := tb.scrape(t)

	const n, workers = 2000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 12 + w; i < 12+n; i += workers {
				send(i)
			}
		})
	}
	wg.Wait()
	after, raw := tb.scrape(t)
	if b, a := before.flurrySeries(), after.flurrySeries(); !slices.Equal(b, a) {
		t.Errorf("series changed: %d before, %d after\nbefore: %v\nafter: %v", len(b), len(a), b, a)
	}
	if bytes.Contains(raw, []byte("junk")) || bytes.Contains(raw, []byte("<")) {
		t.Errorf("junk reached /prometheus")
	}
	if got := after.labelValues("flurry_broker_proxy_ips_total", "type"); !slices.Equal(got, []string{"unknown"}) {
		t.Errorf("proxy types = %v, want [unknown]", got)
	}
	if v := after[series("flurry_broker_proxy_polls_total", "nat", "restricted", "type", "unknown", "status", "idle")]; v < n/12 {
		t.Errorf("idle restricted polls = %v, want at least %d", v, n/12)
	}
}

// TestRejectedRequestsCounted checks that requests refused by the rate
// limiter, the method check, the size limit, the decoder and the duplicate
// Sid check reach the statistics.
func TestRejectedRequestsCounted(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold, ProxyRate: 0.001, ProxyBurst: 2})
	poll := proxyPoll(t, "dupsid", messages.NATUnrestricted, 0, ptr(""))
	waiting := async(func() response { return tb.post(t, "/proxy", poll) })
	tb.rec.waitStarted(t, 1)
	defer func() {
		tb.Close()
		<-waiting
	}()
	expect(t, "duplicate", tb.post(t, "/proxy", poll), http.StatusBadRequest, []byte("duplicate session id\n"))
	expect(t, "over the limit", tb.post(t, "/proxy", poll), http.StatusTooManyRequests, []byte("rate limit exceeded\n"))
	if got := tb.do(t, http.MethodGet, "/proxy", nil, nil); got.status != http.StatusMethodNotAllowed {
		t.Errorf("GET /proxy = %d", got.status)
	}
	if got := tb.post(t, "/answer", nil); got.status != http.StatusBadRequest {
		t.Errorf("empty answer = %d", got.status)
	}
	if got := tb.post(t, "/answer", bytes.Repeat([]byte("a"), messages.MaxBodySize+1)); got.status != http.StatusRequestEntityTooLarge {
		t.Errorf("huge answer = %d", got.status)
	}
	expect(t, "unknown bridge", tb.post(t, "/client", clientPoll(t, sd(t, "offer", "c"), messages.NATUnrestricted, otherFP)), http.StatusOK, []byte(`{"error":"`+messages.StrUnknownBridge+`"}`))

	m, _ := tb.scrape(t)
	checkMetrics(t, m, map[string]float64{
		series("flurry_broker_rate_limited_requests_total", "endpoint", "proxy"):                          8,
		series("flurry_broker_rejected_requests_total", "endpoint", "proxy", "reason", "duplicate_sid"):   8,
		series("flurry_broker_rejected_requests_total", "endpoint", "proxy", "reason", "method"):          8,
		series("flurry_broker_rejected_requests_total", "endpoint", "answer", "reason", "malformed"):      8,
		series("flurry_broker_rejected_requests_total", "endpoint", "answer", "reason", "too_large"):      8,
		series("flurry_broker_rejected_requests_total", "endpoint", "client", "reason", "unknown_bridge"): 8,
		series("flurry_broker_available_proxies", "type", "standalone", "nat", "unrestricted"):            1,
	})
}

// TestStatsClientAddress checks that statistics see the client address the
// broker believes (Forwarded/X-Forwarded-For only from trusted proxies) and
// that without a geoip database every country is "??".
func TestStatsClientAddress(t *testing.T) {
	tests := []struct {
		name    string
		geoip   bool
		trusted bool
		xff     string
		want    string
	}{
		{"peer address", true, false, "", "AA"},
		{"untrusted header ignored", true, false, "198.51.100.7", "AA"},
		{"trusted proxy", true, true, "198.51.100.7", "FR"},
		{"IPv6 client", true, true, "::1", "V6"},
		{"no geoip", false, true, "198.51.100.7", "??"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: time.Millisecond}
			if tt.geoip {
				cfg.GeoIP, _ = openGeoIP(t, testGeoIPv4, testGeoIPv6)
			}
			if tt.trusted {
				cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}
			tb := newTestBroker(t, cfg)
			var h http.Header
			if tt.xff != "" {
				h = http.Header{"X-Forwarded-For": {tt.xff}}
			}
			expect(t, "client", tb.do(t, http.MethodPost, "/client", vector(t, "client-poll-request-1.0.txt"), h), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
			expect(t, "proxy", tb.do(t, http.MethodPost, "/proxy", vector(t, "proxy-poll-request-1.3.json"), h), http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
			m, _ := tb.scrape(t)
			if got := m.labelValues("flurry_broker_client_polls_total", "cc"); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("client countries = %v, want [%s]", got, tt.want)
			}
			if got := m.labelValues("flurry_broker_proxy_ips_total", "cc"); !slices.Equal(got, []string{tt.want}) {
				t.Errorf("proxy countries = %v, want [%s]", got, tt.want)
			}
		})
	}
}

// TestReloadGeoIP checks that a failed reload keeps the old table and a
// good one replaces it.
func TestReloadGeoIP(t *testing.T) {
	db, p4 := openGeoIP(t, "2130706432,2147483647,AA\n", testGeoIPv6)
	tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), GeoIP: db})
	countries := func() []string {
		t.Helper()
		expect(t, "client", tb.post(t, "/client", vector(t, "client-poll-request-1.0.txt")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
		m, _ := tb.scrape(t)
		return m.labelValues("flurry_broker_client_polls_total", "cc")
	}
	if got := countries(); !slices.Equal(got, []string{"AA"}) {
		t.Fatalf("countries = %v, want [AA]", got)
	}

	if err := os.WriteFile(p4, []byte("2130706432,2147483647,BB\nnot a range\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := tb.ReloadGeoIP()
	if !errors.Is(err, broker.ErrGeoIP) || !errors.Is(err, geoip.ErrSyntax) || !strings.Contains(err.Error(), p4+":2") {
		t.Errorf("reload of a broken file: %v", err)
	}
	if err := os.Remove(p4); err != nil {
		t.Fatal(err)
	}
	if err := tb.ReloadGeoIP(); !errors.Is(err, broker.ErrGeoIP) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reload of a missing file: %v", err)
	}
	if got := countries(); !slices.Equal(got, []string{"AA"}) {
		t.Fatalf("after failed reloads: countries = %v, want [AA] (old table kept)", got)
	}

	if err := os.WriteFile(p4, []byte("2130706432,2147483647,BB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tb.ReloadGeoIP(); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if got := countries(); !slices.Equal(got, []string{"AA", "BB"}) {
		t.Fatalf("after the reload: countries = %v, want [AA BB]", got)
	}

	// Without a database there is nothing to reload.
	if err := newTestBroker(t, broker.Config{}).ReloadGeoIP(); err != nil {
		t.Errorf("ReloadGeoIP without geoip: %v", err)
	}
}

// TestMetricsLog checks GET /metrics without a log, with one, and a log that
// cannot be opened.
func TestMetricsLog(t *testing.T) {
	t.Run("no log", func(t *testing.T) {
		tb := newTestBroker(t, broker.Config{})
		if got := tb.do(t, http.MethodGet, "/metrics", nil, nil); got.status != http.StatusNotFound {
			t.Errorf("/metrics = %d, want 404", got.status)
		}
	})
	t.Run("log", func(t *testing.T) {
		db, _ := openGeoIP(t, testGeoIPv4, testGeoIPv6)
		path := filepath.Join(t.TempDir(), "metrics.log")
		tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: time.Millisecond, GeoIP: db, MetricsLogPath: path})
		expect(t, "empty log", tb.do(t, http.MethodGet, "/metrics", nil, nil), http.StatusOK, []byte{})

		expect(t, "proxy", tb.post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")), http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
		expect(t, "client", tb.post(t, "/client", vector(t, "client-poll-request-1.0.txt")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
		if err := tb.EndMetricsPeriod(); err != nil {
			t.Fatal(err)
		}
		got := tb.do(t, http.MethodGet, "/metrics", nil, nil)
		if got.status != http.StatusOK || got.header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("/metrics = %d %s", got.status, got.header.Get("Content-Type"))
		}
		body := string(got.body)
		if !strings.HasPrefix(body, "snowflake-stats-end ") || !strings.Contains(body, " (86400 s)\n") {
			t.Errorf("descriptor does not start with snowflake-stats-end … (86400 s):\n%s", body)
		}
		for _, line := range []string{
			"snowflake-ips AA=1", "snowflake-ips-standalone 1", "snowflake-ips-total 1",
			"snowflake-idle-count 8", "snowflake-proxy-poll-with-relay-url-count 8",
			"client-denied-count 8", "client-unrestricted-denied-count 8",
			"client-http-count 8", "client-http-ips AA=8", "snowflake-ips-nat-unrestricted 1",
		} {
			if !strings.Contains(body, "\n"+line+"\n") {
				t.Errorf("descriptor lacks %q:\n%s", line, body)
			}
		}
		// The next period appends a fresh descriptor.
		if err := tb.EndMetricsPeriod(); err != nil {
			t.Fatal(err)
		}
		body = string(tb.do(t, http.MethodGet, "/metrics", nil, nil).body)
		if n := strings.Count(body, "snowflake-stats-end "); n != 2 {
			t.Errorf("%d descriptors after two periods:\n%s", n, body)
		}
		if !strings.HasSuffix(body, "\nsnowflake-ips-nat-unknown 0\n") || strings.Count(body, "client-http-ips AA=8") != 1 {
			t.Errorf("second descriptor is not empty:\n%s", body)
		}
	})
	t.Run("unwritable", func(t *testing.T) {
		_, err := broker.New(broker.Config{MetricsLogPath: filepath.Join(t.TempDir(), "missing", "metrics.log")})
		if !errors.Is(err, broker.ErrMetrics) {
			t.Errorf("New = %v, want ErrMetrics", err)
		}
	})
}

// TestRunWritesDescriptors checks that Run ends a period every
// MetricsInterval, appending to the log, and shuts the broker down when its
// context ends (in a synctest bubble: no real waiting).
func TestRunWritesDescriptors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.log")
	synctest.Test(t, func(t *testing.T) {
		b, err := broker.New(broker.Config{MetricsLogPath: path, MetricsInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- b.Background(ctx) }()
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()

		w := httptest.NewRecorder()
		b.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if n := strings.Count(w.Body.String(), "snowflake-stats-end "); w.Code != http.StatusOK || n != 2 {
			t.Errorf("/metrics after two intervals: %d, %d descriptors:\n%s", w.Code, n, w.Body)
		}
		if !strings.Contains(w.Body.String(), " (3600 s)\n") {
			t.Errorf("descriptor period is not 3600 s:\n%s", w.Body)
		}

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		// Run shut the broker down: a poll gets "no match" at once.
		w = httptest.NewRecorder()
		b.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/proxy", bytes.NewReader(proxyPoll(t, "afterrun", messages.NATUnrestricted, 0, ptr("")))))
		if !strings.Contains(w.Body.String(), `"Status":"no match"`) {
			t.Errorf("poll after Run = %d %s", w.Code, w.Body)
		}
	})
}

// TestOperatorHandler: by default the public handler has no /prometheus,
// and OperatorHandler (the operator listener's) serves it, with the
// operator pages and nothing of the rendezvous; PublicPrometheus puts
// /prometheus on the public handler too.
func TestOperatorHandler(t *testing.T) {
	tb := newTestBroker(t, broker.Config{})
	if got := tb.do(t, http.MethodGet, "/prometheus", nil, nil); got.status != http.StatusNotFound {
		t.Errorf("public listener /prometheus = %d, want 404", got.status)
	}
	if got := tb.post(t, "/proxy", nil); got.status != http.StatusBadRequest {
		t.Fatalf("empty poll = %d", got.status)
	}
	srv := httptest.NewServer(tb.OperatorHandler())
	defer srv.Close()
	get := func(path string) (int, []byte) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(resp.Body); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, buf.Bytes()
	}
	status, body := get("/prometheus")
	if status != http.StatusOK {
		t.Fatalf("metrics listener /prometheus = %d", status)
	}
	m := parseExposition(t, body)
	checkMetrics(t, m, map[string]float64{
		series("flurry_broker_rejected_requests_total", "endpoint", "proxy", "reason", "malformed"): 8,
	})
	for path, want := range map[string]int{"/": 200, "/status": 200, "/debug": 200, "/healthz": 200, "/metrics": 404, "/proxy": 404, "/amp/client/x": 404} {
		if status, _ := get(path); status != want {
			t.Errorf("metrics listener %s = %d, want %d", path, status, want)
		}
	}
	srv.Client().CloseIdleConnections()

	pub := newTestBroker(t, broker.Config{PublicPrometheus: true})
	if got := pub.do(t, http.MethodGet, "/prometheus", nil, nil); got.status != http.StatusOK || !bytes.Contains(got.body, []byte("go_goroutines")) {
		t.Errorf("PublicPrometheus: public listener /prometheus = %d", got.status)
	}
}

// TestIPCount checks Snowflake's -ip-count-prefix: a proxy's poll counts
// in its NAT's and its type's file, written by Run every IPCountInterval
// (synctest: no real waiting), binned, without the address.
func TestIPCount(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "ips")
	synctest.Test(t, func(t *testing.T) {
		b, err := broker.New(broker.Config{IPCountPrefix: prefix, IPCountInterval: time.Hour, ProxyHold: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- b.Background(ctx) }()
		body := `{"Sid":"abc","Version":"1.3","Type":"standalone","NAT":"unrestricted","Clients":0,"AcceptedRelayPattern":""}`
		r := httptest.NewRequest(http.MethodPost, "/proxy", strings.NewReader(body))
		r.RemoteAddr = "192.0.2.7:1234"
		w := httptest.NewRecorder()
		b.Handler().ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("poll: %d %s", w.Code, w.Body)
		}
		time.Sleep(time.Hour + time.Minute)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	for name, want := range map[string]string{"unrestricted": `"count":8`, "standalone": `"count":8`, "restricted": `"count":0`, "browser": `"count":0`} {
		matches, _ := filepath.Glob(prefix + "-" + name + "-*.log")
		if len(matches) != 1 {
			t.Fatalf("%s: files %v", name, matches)
		}
		b, err := os.ReadFile(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], want) || strings.Contains(string(b), "192.0.2.7") {
			t.Errorf("%s: %s, want 2 lines, the first with %s", name, b, want)
		}
	}
}
