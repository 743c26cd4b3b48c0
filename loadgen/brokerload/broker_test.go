package brokerload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/chaintest/leak"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

func TestParseMix(t *testing.T) {
	for _, tc := range []struct {
		in    string
		want  string
		picks string // values of peers 0..5
		bad   bool
	}{
		{in: "unrestricted", want: "unrestricted=1", picks: "uuuuuu"},
		{in: "unrestricted=2, restricted=1", want: "unrestricted=2,restricted=1", picks: "uuruur"},
		{in: "a=0,b=1", want: "a=0,b=1", picks: "bbbbbb"},
		{in: "", bad: true},
		{in: "a=0", bad: true},
		{in: "a=-1", bad: true},
		{in: "a=x", bad: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			m, err := ParseMix(tc.in)
			if tc.bad {
				if !errors.Is(err, measure.ErrInvalidConfig) {
					t.Fatalf("ParseMix(%q) = %v, %v; want ErrInvalidConfig", tc.in, m, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.String() != tc.want {
				t.Errorf("String() = %q, want %q", m.String(), tc.want)
			}
			var picks string
			for i := range 6 {
				picks += m.pick(i)[:1]
			}
			if picks != tc.picks {
				t.Errorf("picks %q, want %q", picks, tc.picks)
			}
		})
	}
}

func TestRunBrokerFake(t *testing.T) {
	fb := loadgentest.StartFakeBroker(t, 300*time.Millisecond, false)
	var progress bytes.Buffer
	cfg := BrokerConfig{
		URL:              fb.Server.URL,
		Proxies:          8,
		Clients:          []int{1, 4},
		StepDuration:     300 * time.Millisecond,
		IdlePolls:        []int{20, 10},
		IdleSettle:       50 * time.Millisecond,
		Progress:         &progress,
		ProgressInterval: 100 * time.Millisecond,
	}
	if runtime.GOOS == "linux" {
		cfg.PID = os.Getpid() // the fake runs in this process: only checks the plumbing
	}
	res, err := RunBroker(loadgentest.Context(t), cfg)
	if err != nil {
		t.Fatalf("RunBroker: %v (%+v)", err, res)
	}
	if len(res.Steps) != 2 || res.Steps[0].Clients != 1 || res.Steps[1].Clients != 4 {
		t.Fatalf("steps %+v", res.Steps)
	}
	var matches int64
	for _, s := range res.Steps {
		if s.Offers != s.Matches+s.Denials+s.Timeouts+s.Errors {
			t.Errorf("step %+v: counts do not add up", s)
		}
		if s.Matches == 0 || s.Latency.Count != s.Matches || s.Latency.P50Ms <= 0 || s.Latency.P50Ms > s.Latency.P99Ms {
			t.Errorf("step %+v: implausible matches or latency", s)
		}
		if s.Errors != 0 || s.Timeouts != 0 {
			t.Errorf("step %+v: errors or timeouts against a healthy fake (%v)", s, res.ErrorSamples)
		}
		matches += s.Matches
	}
	// A proxy's answer can reach the client and then be cut off by the end
	// of the run before the proxy sees "success": at most one per proxy.
	inFlight := int64(cfg.Proxies)
	if res.Proxy.Matches < matches || res.Proxy.AnswersSuccess < matches-inFlight || res.Proxy.Errors != 0 || res.Proxy.AnswerErrors != 0 {
		t.Errorf("proxy counts %+v do not cover %d client matches", res.Proxy, matches)
	}
	if got := fb.Answers.Load(); got < matches {
		t.Errorf("fake broker saw %d answers, want at least %d", got, matches)
	}
	if res.Idle == nil || len(res.Idle.Steps) != 2 || res.Idle.Steps[0].Polls != 10 || res.Idle.Steps[1].Polls != 20 {
		t.Fatalf("idle %+v", res.Idle)
	}
	for _, s := range res.Idle.Steps {
		if s.Waiting != int64(s.Polls) {
			t.Errorf("idle step %+v: not every poll was waiting", s)
		}
		if cfg.PID > 0 && s.RSSBytes <= 0 {
			t.Errorf("idle step %+v: no RSS", s)
		}
	}
	if res.Idle.Matched != 0 || res.Idle.Errors != 0 {
		t.Errorf("idle %+v: matches or errors without clients", res.Idle)
	}
	if !strings.Contains(progress.String(), "broker: step 2/2") {
		t.Errorf("progress lacks step lines:\n%s", progress.String())
	}
	loadgentest.CheckReport(t, res, res.WriteTable, func(w io.Writer) error { return measure.WriteSVG(w, res.Plots()) }, true)
}

func TestRunBrokerRate(t *testing.T) {
	fb := loadgentest.StartFakeBroker(t, 300*time.Millisecond, false)
	res, err := RunBroker(loadgentest.Context(t), BrokerConfig{
		URL: fb.Server.URL, Proxies: 4, Clients: []int{2}, Rate: 50, StepDuration: 400 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Steps[0]
	// 50/s for 0.4 s: about 20 offers; never many more than the rate allows.
	if s.Offers == 0 || s.Offers > 25 {
		t.Fatalf("rate 50/s for 0.4 s sent %d offers", s.Offers)
	}
}

func TestRunBrokerDenials(t *testing.T) {
	fb := loadgentest.StartFakeBroker(t, 300*time.Millisecond, false)
	res, err := RunBroker(loadgentest.Context(t), BrokerConfig{
		URL: fb.Server.URL, Proxies: -1, Clients: []int{2}, StepDuration: 200 * time.Millisecond,
	})
	// No proxy: every offer is denied, which is a run without progress.
	if !errors.Is(err, measure.ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", err)
	}
	s := res.Steps[0]
	if s.Offers == 0 || s.Denials != s.Offers {
		t.Fatalf("step %+v: want only denials", s)
	}
}

func TestRunBrokerRelayPatternRejected(t *testing.T) {
	fb := loadgentest.StartFakeBroker(t, 300*time.Millisecond, true)
	res, err := RunBroker(loadgentest.Context(t), BrokerConfig{
		URL: fb.Server.URL, Proxies: 2, Clients: []int{1}, StepDuration: 200 * time.Millisecond,
	})
	if !errors.Is(err, measure.ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", err)
	}
	if res.Proxy.RelayPatternRejected == 0 {
		t.Fatalf("proxy counts %+v: no rejection counted", res.Proxy)
	}
	if !strings.Contains(strings.Join(res.ErrorSamples, "\n"), "incorrect relay pattern") {
		t.Fatalf("error samples %q do not explain", res.ErrorSamples)
	}
}

func TestRunBrokerDeadBroker(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	res, err := RunBroker(loadgentest.Context(t), BrokerConfig{URL: srv.URL, Proxies: 1, Clients: []int{1}, StepDuration: 150 * time.Millisecond})
	if !errors.Is(err, measure.ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", err)
	}
	if s := res.Steps[0]; s.Errors == 0 || s.Errors != s.Offers {
		t.Fatalf("step %+v: want only errors", s)
	}
}

// TestRunBrokerClientURLAndChecks: offers go to ClientURL (here the same
// fake broker through a second listener), and each CheckURLs page is
// reported once the load has stopped.
func TestRunBrokerClientURLAndChecks(t *testing.T) {
	fb := loadgentest.StartFakeBroker(t, 300*time.Millisecond, false)
	var clientHits atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clientHits.Add(1)
		fb.Server.Config.Handler.ServeHTTP(w, r)
	}))
	defer front.Close()
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE flurry_broker_available_proxies gauge\nflurry_broker_available_proxies{nat=\"restricted\",type=\"standalone\"} 0\n# TYPE go_goroutines gauge\ngo_goroutines 17\n")
	}))
	defer metrics.Close()
	res, err := RunBroker(loadgentest.Context(t), BrokerConfig{
		URL: fb.Server.URL, ClientURL: front.URL, CheckURLs: []string{metrics.URL, "http://127.0.0.1:1/none"},
		Proxies: 4, Clients: []int{2}, StepDuration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("RunBroker: %v", err)
	}
	if res.Steps[0].Matches == 0 || clientHits.Load() < res.Steps[0].Offers {
		t.Errorf("%d offers, %d matches, %d requests at the client URL", res.Steps[0].Offers, res.Steps[0].Matches, clientHits.Load())
	}
	if len(res.Leftovers) != 2 {
		t.Fatalf("leftovers %+v", res.Leftovers)
	}
	if l := res.Leftovers[0]; l.WaitingPolls != 0 || l.Goroutines != 17 || l.Error != "" {
		t.Errorf("leftover %+v", l)
	}
	if res.Leftovers[1].Error == "" {
		t.Error("an unreachable check URL reports no error")
	}
	if _, err := RunBroker(loadgentest.Context(t), BrokerConfig{URL: fb.Server.URL, CheckURLs: []string{"http://192.0.2.1/prometheus"}}); err == nil {
		t.Error("a non-loopback check URL was accepted")
	}
}
