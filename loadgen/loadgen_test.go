package loadgen

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/chaintest/leak"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"[::1]", true},
		{"localhost", true},
		{"LocalHost", true},
		{"::ffff:127.0.0.1", true},
		{"10.0.0.1", false},
		{"192.168.1.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"example.com", false},
		{"localhost.example.com", false},
		{"", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			err := checkHost(tc.host, false)
			if (err == nil) != tc.ok {
				t.Fatalf("checkHost(%q) = %v, want ok=%v", tc.host, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrNotLoopback) {
				t.Fatalf("error %v does not match ErrNotLoopback", err)
			}
			if err := checkHost(tc.host, true); err != nil {
				t.Fatalf("with allow: %v", err)
			}
		})
	}
}

// TestRefuseNonLoopback checks that every run refuses a non-loopback target
// before connecting anywhere.
func TestRefuseNonLoopback(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"broker", func() error {
			_, err := RunBroker(ctx, BrokerConfig{URL: "http://192.0.2.1:8080"})
			return err
		}},
		{"broker name", func() error {
			_, err := RunBroker(ctx, BrokerConfig{URL: "https://broker.example/"})
			return err
		}},
		{"relay idle", func() error {
			_, err := RunRelayIdle(ctx, RelayIdleConfig{RelayRun: RelayRun{URL: "wss://192.0.2.1/"}})
			return err
		}},
		{"relay throughput", func() error {
			_, err := RunRelayThroughput(ctx, RelayThroughputConfig{URL: "ws://[2001:db8::1]:80/"})
			return err
		}},
		{"chain socks", func() error {
			_, err := RunChain(ctx, ChainConfig{SOCKSAddr: "192.0.2.1:1080", Target: "127.0.0.1:9"})
			return err
		}},
		{"chain url", func() error {
			_, err := RunChain(ctx, ChainConfig{SOCKSAddr: "127.0.0.1:1080", URL: "http://192.0.2.1/"})
			return err
		}},
		{"chain target", func() error {
			_, err := RunChain(ctx, ChainConfig{SOCKSAddr: "127.0.0.1:1080", Target: "192.0.2.1:9000"})
			return err
		}},
		{"target", func() error {
			_, err := StartTarget(TargetConfig{Addr: "0.0.0.0:0"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, ErrNotLoopback) {
				t.Fatalf("got %v, want ErrNotLoopback", err)
			}
		})
	}
}

// TestDialerRefusesNonLoopback checks the second line of defence: a dial
// whose resolved address is not loopback fails before connecting.
func TestDialerRefusesNonLoopback(t *testing.T) {
	ctx := testCtx(t)
	_, err := newDialer(false).DialContext(ctx, "tcp", "192.0.2.1:80")
	if !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("dial 192.0.2.1: %v, want ErrNotLoopback", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"no url", func() error { _, err := RunBroker(ctx, BrokerConfig{}); return err }},
		{"ws url for broker", func() error { _, err := RunBroker(ctx, BrokerConfig{URL: "ws://127.0.0.1/"}); return err }},
		{"bad nat", func() error {
			_, err := RunBroker(ctx, BrokerConfig{URL: "http://127.0.0.1:1", ProxyNAT: Mix{{"symmetric", 1}}})
			return err
		}},
		{"bad pattern", func() error {
			_, err := RunBroker(ctx, BrokerConfig{URL: "http://127.0.0.1:1", RelayPattern: "no-dollar"})
			return err
		}},
		{"bad fingerprint", func() error {
			_, err := RunBroker(ctx, BrokerConfig{URL: "http://127.0.0.1:1", Fingerprint: "zz"})
			return err
		}},
		{"too many proxies", func() error {
			_, err := RunBroker(ctx, BrokerConfig{URL: "http://127.0.0.1:1", Proxies: maxPeers + 1})
			return err
		}},
		{"zero carriers", func() error {
			_, err := RunRelayIdle(ctx, RelayIdleConfig{RelayRun: RelayRun{URL: "ws://127.0.0.1:1/"}, Carriers: []int{0}})
			return err
		}},
		{"bad mode", func() error {
			_, err := RunRelayThroughput(ctx, RelayThroughputConfig{URL: "ws://127.0.0.1:1/", Mode: "upload"})
			return err
		}},
		{"chain no socks", func() error { _, err := RunChain(ctx, ChainConfig{Target: "127.0.0.1:1"}); return err }},
		{"chain bad mode", func() error {
			_, err := RunChain(ctx, ChainConfig{SOCKSAddr: "127.0.0.1:1", Target: "127.0.0.1:1", Mode: "put"})
			return err
		}},
		{"target mode", func() error { _, err := StartTarget(TargetConfig{Mode: "mirror"}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

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
				if !errors.Is(err, ErrInvalidConfig) {
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

func TestSummarize(t *testing.T) {
	r := newRecorder()
	for i := 1; i <= 100; i++ {
		r.add(time.Duration(i) * time.Millisecond)
	}
	p := r.percentiles()
	want := Percentiles{Count: 100, MeanMs: 50.5, P50Ms: 50, P90Ms: 90, P99Ms: 99, MaxMs: 100}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
	if got := newRecorder().percentiles(); got != (Percentiles{}) {
		t.Fatalf("empty recorder: %+v", got)
	}
}

func TestRecorderBounded(t *testing.T) {
	r := newRecorder()
	for i := range maxSamples + 1000 {
		r.add(time.Duration(i))
	}
	if len(r.samples) != maxSamples {
		t.Fatalf("kept %d samples, want %d", len(r.samples), maxSamples)
	}
	if p := r.percentiles(); p.Count != maxSamples+1000 {
		t.Fatalf("count %d", p.Count)
	}
}

func TestParseProc(t *testing.T) {
	status := []byte("Name:\tflurry-broker\nVmPeak:\t  99 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t7\n")
	rss, hwm, err := parseStatus(status)
	if err != nil || rss != 1024*1024 || hwm != 2048*1024 {
		t.Fatalf("parseStatus = %d, %d, %v", rss, hwm, err)
	}
	if _, _, err := parseStatus([]byte("VmRSS: 12 MB\nVmHWM: 1 kB\n")); !errors.Is(err, ErrProcStats) {
		t.Fatalf("bad unit: %v", err)
	}
	if _, _, err := parseStatus([]byte("Name: x\n")); !errors.Is(err, ErrProcStats) {
		t.Fatalf("missing fields: %v", err)
	}
	// A command name with spaces and parentheses; utime 250, stime 150 ticks.
	stat := []byte("1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 7 0 100 1000000 256 18446744073709551615\n")
	cpu, err := parseStat(stat)
	if err != nil || cpu != 4*time.Second {
		t.Fatalf("parseStat = %v, %v; want 4s", cpu, err)
	}
	if _, err := parseStat([]byte("1234 (x) S 1")); !errors.Is(err, ErrProcStats) {
		t.Fatalf("short stat: %v", err)
	}
}

func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS || s.CPU < 0 {
		t.Fatalf("implausible sample %+v", s)
	}
	if _, err := ReadProc(-5); !errors.Is(err, ErrProcStats) {
		t.Fatalf("bad pid: %v", err)
	}
}

// checkReport checks that a result survives JSON, prints a table and
// draws a well-formed SVG, with lines if wantPlots.
func checkReport(t *testing.T, res any, writeTable func(io.Writer), writeSVG func(io.Writer) error, wantPlots bool) {
	t.Helper()
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	back := reflect.New(reflect.TypeOf(res))
	if err := json.Unmarshal(js.Bytes(), back.Interface()); err != nil {
		t.Fatalf("JSON does not parse: %v", err)
	}
	js2, err := json.MarshalIndent(back.Elem().Interface(), "", "  ")
	if err != nil || !bytes.Equal(bytes.TrimSpace(js.Bytes()), js2) {
		t.Fatalf("JSON does not round-trip:\n%s\n%s", js.String(), js2)
	}
	var table bytes.Buffer
	writeTable(&table)
	if table.Len() == 0 {
		t.Fatal("empty table")
	}
	t.Logf("table:%s", table.String())
	var svg bytes.Buffer
	if err := writeSVG(&svg); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	polylines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if (polylines > 0) != wantPlots {
		t.Fatalf("SVG has %d lines, want lines: %v", polylines, wantPlots)
	}
}

func TestRunBrokerFake(t *testing.T) {
	fb := startFakeBroker(t, 300*time.Millisecond, false)
	var progress bytes.Buffer
	cfg := BrokerConfig{
		URL:              fb.srv.URL,
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
	res, err := RunBroker(testCtx(t), cfg)
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
	if got := fb.answers.Load(); got < matches {
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
	checkReport(t, res, res.WriteTable, func(w io.Writer) error { return writeSVG(w, res.plots()) }, true)
}

func TestRunBrokerRate(t *testing.T) {
	fb := startFakeBroker(t, 300*time.Millisecond, false)
	res, err := RunBroker(testCtx(t), BrokerConfig{
		URL: fb.srv.URL, Proxies: 4, Clients: []int{2}, Rate: 50, StepDuration: 400 * time.Millisecond,
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
	fb := startFakeBroker(t, 300*time.Millisecond, false)
	res, err := RunBroker(testCtx(t), BrokerConfig{
		URL: fb.srv.URL, Proxies: -1, Clients: []int{2}, StepDuration: 200 * time.Millisecond,
	})
	// No proxy: every offer is denied, which is a run without progress.
	if !errors.Is(err, ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", err)
	}
	s := res.Steps[0]
	if s.Offers == 0 || s.Denials != s.Offers {
		t.Fatalf("step %+v: want only denials", s)
	}
}

func TestRunBrokerRelayPatternRejected(t *testing.T) {
	fb := startFakeBroker(t, 300*time.Millisecond, true)
	res, err := RunBroker(testCtx(t), BrokerConfig{
		URL: fb.srv.URL, Proxies: 2, Clients: []int{1}, StepDuration: 200 * time.Millisecond,
	})
	if !errors.Is(err, ErrNoProgress) {
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
	res, err := RunBroker(testCtx(t), BrokerConfig{URL: srv.URL, Proxies: 1, Clients: []int{1}, StepDuration: 150 * time.Millisecond})
	if !errors.Is(err, ErrNoProgress) {
		t.Fatalf("got %v, want ErrNoProgress", err)
	}
	if s := res.Steps[0]; s.Errors == 0 || s.Errors != s.Offers {
		t.Fatalf("step %+v: want only errors", s)
	}
}

func TestRelayFake(t *testing.T) {
	for _, mode := range []string{ModeEcho, ModeDownload} {
		t.Run(mode, func(t *testing.T) {
			targetMode := TargetEcho
			if mode == ModeDownload {
				targetMode = TargetSource
			}
			target, err := StartTarget(TargetConfig{Mode: targetMode})
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close()
			fr := startFakeRelay(t, target.Addr())
			ctx := testCtx(t)

			idleCfg := RelayIdleConfig{RelayRun: RelayRun{URL: fr.url(), Settle: 20 * time.Millisecond}, Carriers: []int{10, 4}, KeepAlive: 10 * time.Millisecond}
			if runtime.GOOS == "linux" {
				idleCfg.PID = os.Getpid()
			}
			idle, err := RunRelayIdle(ctx, idleCfg)
			if err != nil {
				t.Fatalf("RunRelayIdle: %v (%+v)", err, idle)
			}
			if len(idle.Steps) != 2 || idle.Steps[0].Open != 4 || idle.Steps[1].Open != 10 {
				t.Fatalf("idle steps %+v", idle.Steps)
			}
			if idle.DialErrors != 0 || idle.ClosedByRelay != 0 {
				t.Fatalf("idle %+v", idle)
			}
			if got := fr.carriers.Load(); got != 10 || fr.distinctIDs() != 10 || fr.badTokens.Load() != 0 {
				t.Fatalf("fake relay saw %d carriers, %d ClientIDs, %d bad tokens", got, fr.distinctIDs(), fr.badTokens.Load())
			}

			tp, err := RunRelayThroughput(ctx, RelayThroughputConfig{
				URL: fr.url(), Carriers: 2, Streams: 2, Duration: time.Second, Mode: mode,
			})
			if err != nil {
				t.Fatalf("RunRelayThroughput: %v (%+v)", err, tp)
			}
			// Every stream opens; how many have had their first byte back
			// by the end depends on the machine's speed.
			if tp.StreamsConnected != 4 || tp.BytesReceived <= 0 || tp.MBPerSec <= 0 ||
				tp.TTFB.Count < 1 || tp.TTFB.Count > 4 || tp.StreamErrors != 0 {
				t.Fatalf("throughput %+v", tp)
			}
			switch mode {
			case ModeEcho:
				// Cannot receive more than was sent in total.
				if st := target.Stats(); st.BytesOut < tp.BytesReceived || tp.BytesSent <= 0 {
					t.Fatalf("echo: target %+v, run %+v", st, tp)
				}
			case ModeDownload:
				if tp.BytesSent != 0 {
					t.Fatalf("download sent %d bytes", tp.BytesSent)
				}
			}
			checkReport(t, idle, idle.WriteTable, func(w io.Writer) error { return writeSVG(w, idle.plots()) }, idleCfg.PID > 0)
			checkReport(t, tp, tp.WriteTable, func(w io.Writer) error { return writeSVG(w, nil) }, false)
		})
	}
}

func TestRelayIdleNoRelay(t *testing.T) {
	// A listener that is not a WebSocket server: every dial fails.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	res, err := RunRelayIdle(testCtx(t), RelayIdleConfig{RelayRun: RelayRun{URL: "ws" + srv.URL[4:] + "/", Settle: time.Millisecond}, Carriers: []int{3}})
	if !errors.Is(err, ErrNoProgress) || res.DialErrors != 3 || len(res.ErrorSamples) == 0 {
		t.Fatalf("got %v, %+v", err, res)
	}
}

func TestChain(t *testing.T) {
	const size = 300 << 10
	source, err := StartTarget(TargetConfig{Mode: TargetSource})
	if err != nil {
		t.Fatal(err)
	}
	defer source.Close()
	echo, err := StartTarget(TargetConfig{Mode: TargetEcho})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	body := bytes.Repeat([]byte("flurry"), size/6)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer web.Close()

	for _, tc := range []struct {
		name       string
		user, pass string
		cfg        ChainConfig
		wantBytes  int64
	}{
		{"get", "", "", ChainConfig{URL: web.URL + "/file", Requests: 3, Concurrency: 2}, 3 * int64(len(body))},
		{"get limited", "", "", ChainConfig{URL: web.URL + "/file", Requests: 2, Bytes: 1000}, 2000},
		{"read", "", "", ChainConfig{Target: source.Addr(), Bytes: size, Requests: 4, Concurrency: 2}, 4 * size},
		{"echo", "", "", ChainConfig{Target: echo.Addr(), Mode: ChainEcho, Bytes: size, Requests: 2}, 2 * size},
		{"echo with auth", "tor", "args", ChainConfig{Target: echo.Addr(), Mode: ChainEcho, Bytes: 1000, Requests: 1, SOCKSUsername: "tor", SOCKSPassword: "args"}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socks, requests := startSOCKS(t, tc.user, tc.pass)
			cfg := tc.cfg
			cfg.SOCKSAddr = socks
			res, err := RunChain(testCtx(t), cfg)
			if err != nil {
				t.Fatalf("RunChain: %v (%+v)", err, res)
			}
			if res.OK != int64(cfg.Requests) || res.Errors != 0 || res.Bytes != tc.wantBytes {
				t.Fatalf("result %+v, want %d ok and %d bytes", res, cfg.Requests, tc.wantBytes)
			}
			if requests.Load() != int64(cfg.Requests) {
				t.Fatalf("SOCKS server saw %d requests, want %d", requests.Load(), cfg.Requests)
			}
			if res.TTFB.Count != res.OK || res.TTFB.P50Ms <= 0 || res.TTFB.MaxMs > res.Total.MaxMs || res.MBPerSec <= 0 {
				t.Fatalf("timings %+v", res)
			}
			checkReport(t, res, res.WriteTable, func(w io.Writer) error { return writeSVG(w, nil) }, false)
		})
	}
}

func TestChainSOCKSRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		user, pass string
		cfg        ChainConfig
		want       string
	}{
		{"wrong password", "tor", "args", ChainConfig{SOCKSUsername: "tor", SOCKSPassword: "nope"}, "authentication failed"},
		{"auth required", "tor", "args", ChainConfig{}, "refused authentication method"},
		{"connect refused", "", "", ChainConfig{Target: "127.0.0.1:1"}, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socks, _ := startSOCKS(t, tc.user, tc.pass)
			cfg := tc.cfg
			cfg.SOCKSAddr, cfg.Requests, cfg.Bytes = socks, 1, 10
			if cfg.Target == "" {
				cfg.Target = "127.0.0.1:9"
			}
			res, err := RunChain(testCtx(t), cfg)
			if !errors.Is(err, ErrNoProgress) || res.Errors != 1 {
				t.Fatalf("got %v, %+v", err, res)
			}
			if !strings.Contains(fmt.Sprint(res.ErrorSamples), tc.want) {
				t.Fatalf("errors %q lack %q", res.ErrorSamples, tc.want)
			}
		})
	}
}

func TestTargetClose(t *testing.T) {
	for _, mode := range []string{TargetEcho, TargetSink, TargetSource} {
		t.Run(mode, func(t *testing.T) {
			tg, err := StartTarget(TargetConfig{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			c, err := newDialer(false).DialContext(testCtx(t), "tcp", tg.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if mode != TargetSink {
				buf := make([]byte, 5)
				if _, err := io.ReadFull(c, buf); err != nil {
					t.Fatal(err)
				}
			}
			// Close must end the open connection, not wait for it.
			if err := tg.Close(); err != nil {
				t.Fatal(err)
			}
			tg.Close()
			if s := tg.Stats(); s.Conns != 1 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestSVGEmpty(t *testing.T) {
	r := NewResult("broker")
	var svg bytes.Buffer
	if err := r.WriteSVG(&svg); err != nil || !strings.Contains(svg.String(), "no data to plot") || r.HasPlots() {
		t.Fatalf("SVG of no result: %v, %q", err, svg.String())
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.1, 2}, {3, 5}, {7, 10}, {4200, 5000}} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestRunBrokerClientURLAndChecks: offers go to ClientURL (here the same
// fake broker through a second listener), and each CheckURLs page is
// reported once the load has stopped.
func TestRunBrokerClientURLAndChecks(t *testing.T) {
	fb := startFakeBroker(t, 300*time.Millisecond, false)
	var clientHits atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clientHits.Add(1)
		fb.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer front.Close()
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# TYPE flurry_broker_available_proxies gauge\nflurry_broker_available_proxies{nat=\"restricted\",type=\"standalone\"} 0\n# TYPE go_goroutines gauge\ngo_goroutines 17\n")
	}))
	defer metrics.Close()
	res, err := RunBroker(testCtx(t), BrokerConfig{
		URL: fb.srv.URL, ClientURL: front.URL, CheckURLs: []string{metrics.URL, "http://127.0.0.1:1/none"},
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
	if _, err := RunBroker(testCtx(t), BrokerConfig{URL: fb.srv.URL, CheckURLs: []string{"http://192.0.2.1/prometheus"}}); err == nil {
		t.Error("a non-loopback check URL was accepted")
	}
}

func TestSourceAddrs(t *testing.T) {
	s, err := newSourceAddrs(netip.MustParsePrefix("127.0.0.0/30"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, s.next().IP.String())
	}
	if want := []string{"127.0.0.2", "127.0.0.1", "127.0.0.2"}; !slices.Equal(got, want) {
		t.Errorf("source addresses %v, want %v", got, want)
	}
	for _, bad := range []string{"::1/64", "127.0.0.1/32"} {
		if _, err := newSourceAddrs(netip.MustParsePrefix(bad)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("newSourceAddrs(%s) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}
