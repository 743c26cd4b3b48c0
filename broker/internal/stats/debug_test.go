package stats

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flurrypt/flurry/messages"
)

func TestWriteDebug(t *testing.T) {
	type add struct {
		typ, nat string
		n        int
	}
	tests := []struct {
		name string
		adds []add
		want string
	}{
		{"empty", nil, "current snowflakes available: 0\n" +
			"\tunknown proxies: 0\n" +
			"NAT Types available:\n\trestricted: 0\n\tunrestricted: 0\n\tunknown: 0"},
		{"known types in fixed order, absent ones left out", []add{
			{"bloco", "restricted", 1},
			{"standalone", "unrestricted", 2},
			{"webext", "", 1},
			{"standalone", "restricted", 1},
			{"<script>alert(1)</script>", "unrestricted", 2},
			{"iptproxy", "bogus", 1},
		}, "current snowflakes available: 8\n" +
			"\tstandalone proxies: 3\n" +
			"\twebext proxies: 1\n" +
			"\tiptproxy proxies: 1\n" +
			"\tbloco proxies: 1\n" +
			"\tunknown proxies: 2\n" +
			"NAT Types available:\n\trestricted: 2\n\tunrestricted: 4\n\tunknown: 2"},
		{"removed proxies", []add{
			{"badge", "restricted", 3},
			{"badge", "restricted", -3},
			{"unknown", "unknown", 1},
		}, "current snowflakes available: 1\n" +
			"\tunknown proxies: 1\n" +
			"NAT Types available:\n\trestricted: 0\n\tunrestricted: 0\n\tunknown: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Available
			r := newTestRecorder(t, Config{})
			for _, x := range tt.adds {
				a.Add(x.typ, x.nat, x.n)
				r.AvailableProxies(x.typ, x.nat, x.n)
			}
			var b []byte
			w := httptest.NewRecorder()
			if err := WriteDebug(w, a); err != nil {
				t.Fatal(err)
			}
			b = w.Body.Bytes()
			if string(b) != tt.want {
				t.Errorf("WriteDebug:\n%q\nwant\n%q", b, tt.want)
			}
			// The handler serves the Recorder's own count, identically.
			w = httptest.NewRecorder()
			r.DebugHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug", nil))
			if w.Code != http.StatusOK || w.Body.String() != tt.want {
				t.Errorf("GET /debug: %d\n%q\nwant\n%q", w.Code, w.Body, tt.want)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestAvailableCounts(t *testing.T) {
	var a Available
	a.Add(messages.ProxyTypeBadge, messages.NATRestricted, 2)
	a.Add(messages.ProxyTypeBadge, messages.NATUnrestricted, 1)
	a.Add("mobile", messages.NATUnrestricted, 1)
	a.Add(messages.ProxyTypeBloco, messages.NATRestricted, -1) // never shown below 0
	for _, c := range []struct {
		got, want int
		what      string
	}{
		{a.Count("badge", "restricted"), 2, "Count(badge, restricted)"},
		{a.Count("bloco", "restricted"), 0, "Count(bloco, restricted)"},
		{a.Type("badge"), 3, "Type(badge)"},
		{a.Type("unknown"), 1, "Type(unknown)"},
		{a.Type("anything"), 1, "Type(anything)"},
		{a.NAT("unrestricted"), 2, "NAT(unrestricted)"},
		{a.NAT("restricted"), 2, "NAT(restricted)"},
		{a.Total(), 4, "Total()"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
}

func TestDebugHandlerMethod(t *testing.T) {
	r := newTestRecorder(t, Config{})
	w := httptest.NewRecorder()
	r.DebugHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/debug", nil))
	if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /debug: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
}
