package broker_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is an event sink that remembers what happened and signals every
// poll that entered a pool on started, and every client request that ended
// on clientEnded.
type recorder struct {
	started     chan event.Proxy
	endedCh     chan event.ProxyOutcome
	clientEnded chan event.ClientOutcome

	mu         sync.Mutex
	ended      []event.ProxyOutcome
	rejected   []event.Proxy
	clients    []event.ClientOutcome
	answers    []event.AnswerOutcome
	unanswered []string // proxy types of ProxyUnanswered
	requests   []event.Reason
	addrs      []netip.Addr // of RequestRejected and ClientPollEnded
}

func newRecorder() *recorder {
	return &recorder{started: make(chan event.Proxy, 4096), endedCh: make(chan event.ProxyOutcome, 4096), clientEnded: make(chan event.ClientOutcome, 4096)}
}

func (r *recorder) ProxyPollStarted(p event.Proxy) {
	select {
	case r.started <- p:
	default:
	}
}

func (r *recorder) ProxyPollEnded(_ event.Proxy, o event.ProxyOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, o)
	select {
	case r.endedCh <- o:
	default:
	}
}

func (r *recorder) ProxyPollRejected(p event.Proxy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = append(r.rejected, p)
}

func (r *recorder) ClientPollEnded(c event.Client, o event.ClientOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients = append(r.clients, o)
	r.addrs = append(r.addrs, c.Addr)
	select {
	case r.clientEnded <- o:
	default:
	}
}

func (r *recorder) ProxyAnswered(_ string, o event.AnswerOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, o)
}

func (r *recorder) ProxyUnanswered(proxyType string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unanswered = append(r.unanswered, proxyType)
}

func (r *recorder) RequestRejected(_ event.Endpoint, reason event.Reason, addr netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, reason)
	r.addrs = append(r.addrs, addr)
}

// waitStarted waits until n more polls have entered a pool.
func (r *recorder) waitStarted(t testing.TB, n int) {
	t.Helper()
	for range n {
		<-r.started
	}
}

// testBroker is a broker served over loopback HTTP.
type testBroker struct {
	*broker.Broker
	rec    *recorder
	srv    *httptest.Server
	client *http.Client
}

// newTestBroker starts a broker with cfg on an httptest server whose
// listener is the broker's (so proxy polls are parked off net/http). The
// server is closed (after Close) when the test ends.
func newTestBroker(t testing.TB, cfg broker.Config) *testBroker {
	t.Helper()
	return startTestBroker(t, cfg, parkingListener, nil)
}

// newPlainTestBroker is newTestBroker on a plain httptest server: polls
// wait in their handler.
func newPlainTestBroker(t testing.TB, cfg broker.Config) *testBroker {
	t.Helper()
	return startTestBroker(t, cfg, plainListener, nil)
}

// newGraceTestBroker is newTestBroker with the production delay before a
// poll is parked while clients are being matched.
func newGraceTestBroker(t testing.TB, cfg broker.Config) *testBroker {
	t.Helper()
	return startTestBroker(t, cfg, parkingListener, nil, func(b *broker.Broker) {})
}

// listenerKind is how startTestBroker serves a broker.
type listenerKind int

const (
	plainListener   listenerKind = iota // the httptest server's: polls wait in their handler
	parkingListener                     // Broker.Listener: polls park
)

// serveModes are the ways a broker can be served; tests of behaviour that
// must not depend on it run in each.
var serveModes = []struct {
	name  string
	start func(testing.TB, broker.Config) *testBroker
}{
	{"parked", newTestBroker},
	{"grace", newGraceTestBroker},
	{"plain", newPlainTestBroker},
}

// startTestBroker starts the test broker; unless on a plain listener, with
// setup (default: park polls at once) run before serving.
// configure, if not nil, sets up the http.Server before it starts.
func startTestBroker(t testing.TB, cfg broker.Config, listen listenerKind, configure func(*http.Server), setup ...func(*broker.Broker)) *testBroker {
	t.Helper()
	rec := newRecorder()
	b, err := broker.NewWithSink(cfg, rec)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewUnstartedServer(b.Handler())
	if configure != nil {
		configure(srv.Config)
	}
	if listen != plainListener {
		if len(setup) == 0 {
			setup = append(setup, func(b *broker.Broker) { b.SetParkAfter(0) })
		}
		for _, f := range setup {
			f(b)
		}
		srv.Listener = b.Listener(srv.Listener, nil)
	}
	srv.Start()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		b.Close()
		srv.Close()
		tr.CloseIdleConnections()
	})
	return &testBroker{Broker: b, rec: rec, srv: srv, client: &http.Client{Transport: tr}}
}

// response is an HTTP response read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request and reads the whole response.
func (tb *testBroker) do(t testing.TB, method, path string, body []byte, header http.Header) response {
	t.Helper()
	return tb.doWith(t, tb.client, method, path, body, header)
}

// doWith is do through the HTTP client c.
func (tb *testBroker) doWith(t testing.TB, c *http.Client, method, path string, body []byte, header http.Header) response {
	t.Helper()
	req, err := http.NewRequest(method, tb.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (tb *testBroker) post(t testing.TB, path string, body []byte) response {
	t.Helper()
	return tb.do(t, http.MethodPost, path, body, nil)
}

// vector reads a file from testdata.
func vector(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeFile writes a temporary file and returns its path.
func writeFile(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// expect checks a response's status and exact body.
func expect(t testing.TB, what string, got response, status int, body []byte) {
	t.Helper()
	if got.status != status || !bytes.Equal(got.body, body) {
		t.Errorf("%s: got %d %q, want %d %q", what, got.status, got.body, status, body)
	}
}
