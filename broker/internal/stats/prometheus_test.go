package stats

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/messages"
	"github.com/prometheus/client_golang/prometheus"
)

func TestPrometheusRounding(t *testing.T) {
	ca := "129.97.208.23"
	tests := []struct {
		n    int
		want float64
	}{{1, 8}, {7, 8}, {8, 8}, {9, 16}, {17, 24}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			r := newTestRecorder(t, Config{})
			for i := range tt.n {
				r.ClientPoll(addr(t, ca), messages.NATRestricted, MethodHTTP, StatusDenied)
				r.ProxyPoll(addr(t, fmt.Sprintf("129.97.208.%d", i)), "webext", messages.NATUnrestricted, true)
				r.ProxyPollResult("webext", messages.NATUnrestricted, false)
				r.ProxyAnswer("", false)
				r.ProxyUnanswered("webext")
				r.RateLimited(EndpointClient)
				r.RequestRejected(EndpointProxy, ReasonTooLarge)
			}
			fams := scrape(t, r)
			checks := []struct {
				name   string
				labels []string
			}{
				{"flurry_broker_client_polls_total", []string{"nat", "restricted", "status", "denied", "rendezvous_method", "http", "cc", "CA"}},
				{"flurry_broker_proxy_ips_total", []string{"type", "webext", "nat", "unrestricted", "cc", "CA"}},
				{"flurry_broker_proxy_polls_total", []string{"nat", "unrestricted", "type", "webext", "status", "idle"}},
				{"flurry_broker_proxy_relay_pattern_polls_total", []string{"nat", "unrestricted", "type", "webext", "relay_pattern", "present"}},
				{"flurry_broker_proxy_answers_total", []string{"type", "unknown", "status", "client_gone"}},
				{"flurry_broker_proxy_unanswered_total", []string{"type", "webext"}},
				{"flurry_broker_rate_limited_requests_total", []string{"endpoint", "client"}},
				{"flurry_broker_rejected_requests_total", []string{"endpoint", "proxy", "reason", "too_large"}},
			}
			for _, c := range checks {
				v, ok := value(fams, c.name, c.labels...)
				if !ok || v != tt.want {
					t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, v, ok, tt.want)
				}
			}
			// The gauge is exact.
			r.AvailableProxies("badge", messages.NATRestricted, +3)
			r.AvailableProxies("badge", messages.NATRestricted, -1)
			if v, _ := value(scrape(t, r), "flurry_broker_available_proxies", "type", "badge", "nat", "restricted"); v != 2 {
				t.Errorf("available_proxies = %v, want 2", v)
			}
		})
	}
}

// Descriptor periods do not reset Prometheus counters, and each period's
// addresses are new (address, type, NAT) combinations again.
func TestPrometheusAcrossPeriods(t *testing.T) {
	r := newTestRecorder(t, Config{})
	for range 9 {
		pollIdle(r, addr(t, "129.97.208.1"), "standalone", messages.NATUnknown)
		descriptor(t, r)
	}
	fams := scrape(t, r)
	if v, _ := value(fams, "flurry_broker_proxy_ips_total", "type", "standalone", "nat", "unknown", "cc", "CA"); v != 16 {
		t.Errorf("proxy_ips_total = %v, want 16 (9 periods, rounded)", v)
	}
	if v, _ := value(fams, "flurry_broker_proxy_polls_total", "nat", "unknown", "type", "standalone", "status", "idle"); v != 16 {
		t.Errorf("proxy_polls_total = %v, want 16", v)
	}
}

func TestPrometheusUntrackedAddresses(t *testing.T) {
	r := newTestRecorder(t, Config{MaxProxyIPs: 1})
	pollIdle(r, addr(t, "129.97.208.1"), "standalone", messages.NATUnknown)
	pollIdle(r, addr(t, "129.97.208.2"), "standalone", messages.NATUnknown)
	if v, ok := value(scrape(t, r), "flurry_broker_proxy_ips_untracked_total"); v != 8 {
		t.Errorf("proxy_ips_untracked_total = %v (found %v), want 8", v, ok)
	}
}

func TestPrometheusHistogram(t *testing.T) {
	r := newTestRecorder(t, Config{})
	// 7 fast requests, then one in each of three higher buckets, one
	// above them all: cumulative 7, 8, 9, 10 rounded to 8, 8, 16, 16.
	for range 7 {
		r.ObserveRequest(EndpointProxy, time.Millisecond)
	}
	for _, d := range []time.Duration{20 * time.Millisecond, 3 * time.Second, time.Minute} {
		r.ObserveRequest(EndpointProxy, d)
	}
	r.ObserveRequest("no-such-endpoint", time.Second)
	fams := scrape(t, r)
	f := fams["flurry_broker_request_duration_seconds"]
	if f == nil {
		t.Fatal("no request_duration_seconds family")
	}
	var seen []string
	for _, m := range f.GetMetric() {
		endpoint := m.GetLabel()[0].GetValue()
		seen = append(seen, endpoint)
		h := m.GetHistogram()
		if endpoint != EndpointProxy {
			continue
		}
		if h.GetSampleCount() != 16 {
			t.Errorf("sample count %d, want 16 (10 rounded)", h.GetSampleCount())
		}
		if got, want := h.GetSampleSum(), 63.027; got < want-1e-9 || got > want+1e-9 {
			t.Errorf("sample sum %v, want %v", got, want)
		}
		var prev uint64
		for _, b := range h.GetBucket() {
			c := b.GetCumulativeCount()
			if c%8 != 0 || c < prev {
				t.Errorf("bucket le=%v count %d: not a non-decreasing multiple of 8", b.GetUpperBound(), c)
			}
			prev = c
			want := uint64(8)
			if b.GetUpperBound() >= 5 {
				want = 16
			}
			if c != want {
				t.Errorf("bucket le=%v count %d, want %d", b.GetUpperBound(), c, want)
			}
		}
	}
	slices.Sort(seen)
	if want := []string{"other", "proxy"}; !slices.Equal(seen, want) {
		t.Errorf("endpoints %v, want %v", seen, want)
	}
}

func TestPrometheusRegistry(t *testing.T) {
	t.Run("own registry has go and process collectors", func(t *testing.T) {
		fams := scrape(t, newTestRecorder(t, Config{}))
		for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "flurry_broker_available_proxies"} {
			if fams[name] == nil {
				t.Errorf("no %s", name)
			}
		}
	})
	t.Run("given registry gets only the recorder", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		r := newTestRecorder(t, Config{Registry: reg})
		if r.Registry() != reg {
			t.Fatal("Registry() is not the given registry")
		}
		for name := range scrape(t, r) {
			if !strings.HasPrefix(name, metricPrefix) {
				t.Errorf("unexpected family %s", name)
			}
		}
		if _, err := New(Config{Registry: reg}); !errors.Is(err, ErrRegister) {
			t.Errorf("second Recorder in one registry: %v, want ErrRegister", err)
		}
	})
}

// allowedLabelValues are every label value the Recorder may export, apart
// from cc.
func allowedLabelValues() map[string][]string {
	return map[string][]string{
		"type":              append(messages.KnownProxyTypes(), "unknown"),
		"nat":               {"restricted", "unrestricted", "unknown"},
		"status":            {"idle", "matched", "denied", "timeout", "other", "success", "client_gone"},
		"rendezvous_method": {"http", "ampcache", "sqs", "unknown"},
		"relay_pattern":     {"present", "absent"},
		"endpoint":          {"proxy", "client", "answer", "amp", "sqs", "debug", "metrics", "prometheus", "status", "robots", "other"},
		"reason":            {"method", "too_large", "malformed", "unknown_bridge", "duplicate_sid", "other"},
	}
}

// checkLabels fails if a flurry_broker_ series has a label value outside
// its fixed set.
func checkLabels(t *testing.T, series []string) {
	t.Helper()
	allowed := allowedLabelValues()
	for _, s := range series {
		labels := s[strings.IndexByte(s, '{')+1 : len(s)-1]
		if labels == "" {
			continue
		}
		for _, kv := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "cc":
				if v != "??" && countryCode(v) != v {
					t.Errorf("series %s: bad country %q", s, v)
				}
			case "le":
			default:
				if !slices.Contains(allowed[k], v) {
					t.Errorf("series %s: label %s=%q outside its fixed set", s, k, v)
				}
			}
		}
	}
}

// Thousands of distinct junk strings, markup included, add no series: each
// is mapped to its set's catch-all, which the baseline already holds.
func TestPrometheusCardinality(t *testing.T) {
	r := newTestRecorder(t, Config{})
	ip := addr(t, "129.97.208.23")
	feed := func(typ, nat, method, status, endpoint, reason string) {
		r.ProxyPoll(ip, typ, nat, true)
		r.ProxyPollResult(typ, nat, false)
		r.ProxyRejectedRelayPattern(typ, nat, true)
		r.ProxyAnswer(typ, true)
		r.ProxyUnanswered(typ)
		r.AvailableProxies(typ, nat, +1)
		r.ClientPoll(ip, nat, method, status)
		r.RateLimited(endpoint)
		r.RequestRejected(endpoint, reason)
		r.ObserveRequest(endpoint, time.Millisecond)
	}
	// Baseline: one event of every catch-all value.
	feed("unknown", "unknown", "unknown", "other", "other", "other")
	before := flurrySeries(scrape(t, r))
	checkLabels(t, before)

	junk := []string{"<script>alert(1)</script>", `"><img src=x onerror=alert(1)>`, "", " ", "Standalone",
		"standalone ", "webext\n", "unknown\x00", strings.Repeat("x", 10000), "\xff\xfe", "{{.}}", "cc=\"US\""}
	for i := range 5000 {
		s := fmt.Sprintf("junk-%d-<b>%d</b>", i, i)
		if i < len(junk) {
			s = junk[i]
		}
		feed(s, s, s, s, s, s)
	}
	after := flurrySeries(scrape(t, r))
	checkLabels(t, after)
	if !slices.Equal(before, after) {
		t.Errorf("series changed: %d before, %d after", len(before), len(after))
		for _, s := range after {
			if !slices.Contains(before, s) {
				t.Logf("new series: %.200s", s)
			}
		}
	}
	// The junk was counted, under the catch-alls.
	if v, _ := value(scrape(t, r), "flurry_broker_available_proxies", "type", "unknown", "nat", "unknown"); v != 5001 {
		t.Errorf("available_proxies{unknown,unknown} = %v, want 5001", v)
	}
}

func TestPrometheusHandlerMethod(t *testing.T) {
	r := newTestRecorder(t, Config{})
	w := httptest.NewRecorder()
	r.PrometheusHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/prometheus", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /prometheus: %d, want 405", w.Code)
	}
}

func TestInstrument(t *testing.T) {
	r := newTestRecorder(t, Config{})
	h := r.Instrument(EndpointAnswer, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/answer", nil))
	if w.Code != http.StatusTeapot {
		t.Errorf("status %d, want 418", w.Code)
	}
	if v, ok := value(scrape(t, r), "flurry_broker_request_duration_seconds", "endpoint", "answer"); v != 8 {
		t.Errorf("request_duration_seconds{answer} count = %v (found %v), want 8", v, ok)
	}
}
