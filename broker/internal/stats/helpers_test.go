package stats

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/geoip"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The test geoip files (testdata/geoip, testdata/geoip6) map
// 129.97.208.0/24 and 2001:db8::/64 to CA, 198.51.100.0/24 to FR and
// 203.0.113.0/24 to DE; everything else is unknown ("??").
func testGeoIP(tb testing.TB) *geoip.DB {
	tb.Helper()
	db, err := geoip.Open("testdata/geoip", "testdata/geoip6")
	if err != nil {
		tb.Fatalf("geoip.Open: %v", err)
	}
	return db
}

// testEnd is the fixed clock of most tests.
var testEnd = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClock is a settable clock.
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

// newTestRecorder returns a Recorder with the test geoip database and a
// clock fixed at testEnd, unless cfg sets them.
func newTestRecorder(tb testing.TB, cfg Config) *Recorder {
	tb.Helper()
	if cfg.GeoIP == nil {
		cfg.GeoIP = testGeoIP(tb)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return testEnd }
	}
	r, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return r
}

func addr(tb testing.TB, s string) netip.Addr {
	tb.Helper()
	a, err := netip.ParseAddr(s)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// descriptor ends the period and returns its text.
func descriptor(tb testing.TB, r *Recorder) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := r.EndPeriod(&buf); err != nil {
		tb.Fatalf("EndPeriod: %v", err)
	}
	return buf.String()
}

// scrape fetches the Prometheus handler's output and parses it.
func scrape(tb testing.TB, r *Recorder) map[string]*dto.MetricFamily {
	tb.Helper()
	w := httptest.NewRecorder()
	r.PrometheusHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/prometheus", nil))
	if w.Code != http.StatusOK {
		tb.Fatalf("GET /prometheus: %d %s", w.Code, w.Body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(w.Body)
	if err != nil {
		tb.Fatalf("parse exposition: %v", err)
	}
	return fams
}

// flurrySeries returns every flurry_broker_ series as "name{l=v,...}",
// sorted.
func flurrySeries(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for name, f := range fams {
		if !strings.HasPrefix(name, metricPrefix) {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, name+"{"+strings.Join(labels, ",")+"}")
		}
	}
	sort.Strings(out)
	return out
}

// value returns the value of the series of family name whose labels are
// exactly the given name=value pairs; ok is false if there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, ok bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel())*2 != len(labels) {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
