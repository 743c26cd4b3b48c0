package broker_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
)

// FuzzEndpoints throws arbitrary bodies (and NAT headers) at each endpoint:
// never a panic, never a 5xx (other than the legacy client's 503 and 504).
func FuzzEndpoints(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*-request*")
	for _, name := range seeds {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for ep := range byte(3) {
			f.Add(ep, data, "")
		}
	}
	offer, _ := os.ReadFile("testdata/sdp-offer.json")
	f.Add(byte(1), offer, "restricted")
	f.Add(byte(1), offer, "bogus")
	f.Add(byte(1), []byte("1.0\n"), "")
	f.Add(byte(0), []byte(`{"Sid":"a","Version":"1.9","AcceptedRelayPattern":"^$"}`), "")
	f.Add(byte(2), []byte(`{"Version":"1","Sid":"a","Answer":"{\"type\":\"answer\",\"sdp\":\"a=candidate\"}"}`), "")
	f.Add(byte(0), []byte{}, "")

	b, err := broker.New(broker.Config{
		BridgeListPath: "testdata/bridges-snowflake.ndjson",
		ProxyHold:      time.Millisecond,
		ClientTimeout:  time.Millisecond,
		// Every request comes from httptest's one address.
		DisableRateLimits: true,
	})
	if err != nil {
		f.Fatal(err)
	}
	h := b.Handler()
	paths := []string{"/proxy", "/client", "/answer"}
	f.Fuzz(func(t *testing.T, ep byte, body []byte, nat string) {
		req := httptest.NewRequest(http.MethodPost, paths[int(ep)%len(paths)], bytes.NewReader(body))
		req.Header.Set("Snowflake-NAT-Type", nat)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		// 503 and 504 are the legacy client protocol's "no proxies" and
		// "timed out", not errors.
		legacyStatus := req.URL.Path == "/client" && (w.Code == http.StatusServiceUnavailable || w.Code == http.StatusGatewayTimeout)
		if w.Code >= 500 && !legacyStatus {
			t.Fatalf("%s: status %d for %q: %q", req.URL.Path, w.Code, body, w.Body.Bytes())
		}
	})
}
