package interop

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/browsertest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/netlab"
	"github.com/flurrypt/flurry/netlab/censor"
)

// The browser proxy (webproxy/, JavaScript) runs in Debian's headless
// Chromium, in the child test process's network namespace, beside the
// chain's broker, relay and client. Chromium gathers no ICE candidate on
// loopback, so the namespace gets one more interface with an address and a
// default route (a veth pair whose ends both stay in it); the client's
// WebRTC reaches the browser there, and the browser reaches the broker,
// the NAT probe and the relay (wss://, a certificate Chromium is told to
// trust by its key's hash) on 127.0.0.1.

// browserIfAddr is the address the namespace's extra interface carries.
const browserIfAddr = "198.18.5.1"

// browserNetwork gives the child's namespace the interface Chromium
// gathers candidates on.
func browserNetwork(t *testing.T) {
	t.Helper()
	ip := lookCommand("ip")
	for _, args := range [][]string{
		{"link", "add", "wp0", "type", "veth", "peer", "name", "wp1"},
		{"addr", "add", browserIfAddr + "/24", "dev", "wp0"},
		{"link", "set", "wp0", "up"},
		{"link", "set", "wp1", "up"},
		{"route", "add", "default", "dev", "wp0"},
	} {
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}

// relayCertificate writes a self-signed certificate for ip (127.0.0.1 if
// nil) into dir and returns the files and the base64 SHA-256 of its public
// key, which Chromium's -ignore-certificate-errors-spki-list trusts.
func relayCertificate(t *testing.T, dir string, ip ...net.IP) (*RelayTLS, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "flurry test relay"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  append(ip, net.IPv4(127, 0, 0, 1)),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	files := &RelayTLS{CertFile: filepath.Join(dir, "relay.crt"), KeyFile: filepath.Join(dir, "relay.key")}
	if err := os.WriteFile(files.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	return files, base64.StdEncoding.EncodeToString(sum[:])
}

// buildWebProxy builds the browser proxy for the chain's network into a
// directory of the test and returns it; extra flags go to the build.
func buildWebProxy(t *testing.T, c *Chain, extra ...string) string {
	t.Helper()
	node := testenv.LookPath(t, "node", "nodejs")
	out := filepath.Join(t.TempDir(), "webproxy")
	args := append([]string{filepath.Join("..", "webproxy", "build.mjs"), "-out", out,
		"-broker", c.BrokerURL, "-relay-pattern", "^" + c.host() + ":*$", "-relay", c.RelayURL,
		"-nat-probe", c.NATProbeURL, "-stun", "", "-allow-private-relay"}, extra...)
	if b, err := exec.Command(node, args...).CombinedOutput(); err != nil {
		t.Fatalf("build the browser proxy: %v\n%s", err, b)
	}
	return out
}

// serveDir serves dir over HTTP on 127.0.0.1 (a secure context for the
// browser) until the test ends, and returns its URL.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	s := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(s.Close)
	return s.URL + "/"
}

// webProxyState is what the test page shows as JSON (src/proxy.js).
type webProxyState struct {
	Running         bool
	NAT             string `json:"nat"`
	NATTest         string `json:"natTest"`
	Relay           string `json:"relay"`
	Broker          string `json:"broker"`
	Clients         int    `json:"clients"`
	Helped          int    `json:"helped"`
	Failed          int    `json:"failed"`
	BytesToClient   int64  `json:"bytesToClient"`
	BytesFromClient int64  `json:"bytesFromClient"`
}

// browserProxy is a headless Chromium running the browser proxy's test page.
type browserProxy struct {
	tab      context.Context
	problems func() []string
}

// chromiumFlags let the page's WebRTC use host candidates (no mDNS names)
// and trust the relay's certificate.
func chromiumFlags(spki string) []chromedp.ExecAllocatorOption {
	return []chromedp.ExecAllocatorOption{
		chromedp.Flag("disable-features", "WebRtcHideLocalIpsWithMdns"),
		chromedp.Flag("ignore-certificate-errors-spki-list", spki),
	}
}

// startBrowserProxy opens the test page of the web build at webURL in a
// new headless Chromium; flags are added to its command line.
func startBrowserProxy(t *testing.T, webURL, spki string, flags ...chromedp.ExecAllocatorOption) *browserProxy {
	t.Helper()
	tab, problems := browsertest.New(t, append(chromiumFlags(spki), flags...)...)
	browsertest.Run(t, tab, "open the test page", chromedp.Navigate(webURL+"index.html"))
	return &browserProxy{tab: tab, problems: problems}
}

// state reads the page's state.
func (b *browserProxy) state(t *testing.T) webProxyState {
	t.Helper()
	raw := browsertest.Run(t, b.tab, "read the state",
		chromedp.Evaluate[string](`document.getElementById("state-json").textContent`))
	var s webProxyState
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("page state %q: %v", raw, err)
	}
	return s
}

// waitState polls the page's state until ok accepts it, or fails the test
// after a far bound.
func (b *browserProxy) waitState(t *testing.T, what string, ok func(webProxyState) bool) webProxyState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := b.state(t)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: state %+v; page problems: %q", what, s, b.problems())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// browserChain is a chain without a proxy process, its relay serving
// wss://, and the browser proxy built for it.
type browserChain struct {
	*Chain
	build string // the webproxy build's directory
	spki  string // the relay certificate's key hash, for Chromium
}

// startBrowserChainOnly starts a chain of roles for a browser proxy and
// builds the browser proxy for it; extra flags go to the build.
func startBrowserChainOnly(t *testing.T, ctx context.Context, roles Roles, extra ...string) *browserChain {
	t.Helper()
	browserNetwork(t)
	relayTLS, spki := relayCertificate(t, t.TempDir())
	c := startChainConfig(t, ctx, ChainConfig{Roles: roles, FileSize: chainFileSize, NoProxy: true,
		RelayTLS: relayTLS, NATProbeAllInterfaces: true})
	return &browserChain{Chain: c, build: buildWebProxy(t, c, extra...), spki: spki}
}

// ready reports whether a proxy's state says it can serve: its NAT test
// passed, the broker answered and the default relay is reachable.
func ready(s webProxyState) bool {
	return s.NAT == "unrestricted" && s.Broker == "ok" && s.Relay == "reachable"
}

// startBrowserChain starts a chain of roles without a proxy process, its
// relay serving wss://, and the browser proxy's test page in Chromium
// polling its broker, ready once the NAT test has passed and the broker
// answered.
func startBrowserChain(t *testing.T, ctx context.Context, roles Roles) (*Chain, *browserProxy) {
	t.Helper()
	c := startBrowserChainOnly(t, ctx, roles)
	b := startBrowserProxy(t, serveDir(t, filepath.Join(c.build, "web")), c.spki)
	b.waitState(t, "the NAT test and a first poll", ready)
	// A client's offer finds the proxy only while one of its polls waits at
	// the broker; between polls Snowflake's client would try again only 10 s
	// later. Flurry's broker serves /debug at 1 request/s per address after
	// a burst of 20, and says "rate limit exceeded" beyond.
	deadline := time.Now().Add(time.Minute)
	for {
		line := brokerAvailable(t, c.Chain)
		if n, ok := strings.CutPrefix(line, "current snowflakes available: "); ok && n != "0" {
			return c.Chain, b
		}
		if time.Now().After(deadline) {
			t.Fatalf("no poll of the page waits at the broker: /debug says %q; state %+v", line, b.state(t))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// brokerAvailable returns the first line of the broker's /debug page,
// Snowflake's and Flurry's alike: "current snowflakes available: N", the
// proxies' polls waiting there.
func brokerAvailable(t *testing.T, c *Chain) string {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	r, err := client.Get(c.BrokerURL + "debug")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(body), "\n")
	return first
}

// browserRoles are the chains the browser proxy serves: Flurry's client,
// broker and relay, and Snowflake's client and broker with Flurry's relay
// (the only one that takes a certificate file).
func browserRoles() []Roles {
	return []Roles{
		{Broker: Flurry, Proxy: Flurry, Client: Flurry, Relay: Flurry},
		{Broker: Snowflake, Proxy: Flurry, Client: Snowflake, Relay: Flurry},
	}
}

// TestWebProxyChain downloads 20 MiB through the browser proxy in headless
// Chromium, with Flurry's client and broker and with Snowflake's, and
// checks the SHA-256, that the page counts the person it helped, and that
// the page logged no error; the time to first byte and MB/s of each are
// printed at the end.
func TestWebProxyChain(t *testing.T) {
	var mu sync.Mutex
	var results []cellResult
	for _, roles := range browserRoles() {
		t.Run(roles.Client.String(), func(t *testing.T) {
			if !inNetns(t, func(r cellResult) {
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}) {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			c, b := startBrowserChain(t, ctx, roles)
			res, err := demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, nil)
			if err != nil {
				t.Fatalf("download: %v; page state %+v", err, b.state(t))
			}
			s := b.waitState(t, "the byte counts", func(s webProxyState) bool { return s.BytesToClient >= res.Bytes })
			if s.Helped < 1 {
				t.Errorf("the page helped %d people, want at least 1", s.Helped)
			}
			for _, p := range b.problems() {
				if strings.HasPrefix(p, "exception") || strings.Contains(p, "log error") {
					t.Errorf("page problem: %s", p)
				}
			}
			report(t, cellResult{Name: "broker=" + roles.Broker.String() + ",client=" + roles.Client.String(),
				Bytes: res.Bytes, FirstByte: res.FirstByte, Total: res.Total, MBps: res.Throughput() / 1e6})
		})
	}
	for _, r := range results {
		t.Logf("browser proxy in headless Chromium, %s, relay=flurry: %d bytes intact, first byte after %v, %.2f MB/s",
			r.Name, r.Bytes, r.FirstByte.Round(time.Millisecond), r.MBps)
	}
}

// extensionState reads, in the extension's popup page, what its service
// worker stored: the proxy's last state, the switch and the count of
// people helped.
type extensionState struct {
	State   webProxyState `json:"state"`
	Enabled bool          `json:"enabled"`
	Helped  int           `json:"helped"`
}

// readExtension reads the extension's storage from its popup page.
func readExtension(t *testing.T, popup context.Context) extensionState {
	t.Helper()
	raw := browsertest.Run(t, popup, "read the extension's storage", chromedp.Evaluate[string](`(async () => {
		const l = await chrome.storage.local.get(["enabled", "helped"]);
		const s = await chrome.storage.session.get("state");
		return JSON.stringify({state: s.state ?? {}, enabled: l.enabled ?? true, helped: l.helped ?? 0});
	})()`, chromedp.EvalAwaitPromise))
	var s extensionState
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("extension storage %q: %v", raw, err)
	}
	return s
}

// waitExtension polls the extension's storage until ok accepts it.
func waitExtension(t *testing.T, popup context.Context, what string, ok func(extensionState) bool) extensionState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s := readExtension(t, popup)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: extension state %+v", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWebProxyExtension loads the Chromium extension (Manifest V3: a
// service worker and an offscreen document running the proxy) unpacked in
// headless Chromium, downloads 20 MiB through it with Flurry's client and
// broker, and checks what its popup shows: on, the person helped, then
// off once switched off, with the offscreen document gone.
func TestWebProxyExtension(t *testing.T) {
	if !inNetns(t, nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startBrowserChainOnly(t, ctx, browserRoles()[0])
	ext := filepath.Join(c.build, "chromium")
	browser, _ := browsertest.New(t, append(chromiumFlags(c.spki),
		chromedp.Flag("load-extension", ext), chromedp.Flag("disable-extensions-except", ext))...)
	var id string
	deadline := time.Now().Add(30 * time.Second)
	for id == "" {
		targets, err := chromedp.Targets(browser)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range targets {
			if rest, ok := strings.CutPrefix(ti.URL, "chrome-extension://"); ok && strings.HasSuffix(ti.URL, "/background.js") {
				id, _, _ = strings.Cut(rest, "/")
			}
		}
		if id == "" && time.Now().After(deadline) {
			t.Fatalf("the extension's service worker never started; targets %+v", targets)
		}
		time.Sleep(100 * time.Millisecond)
	}
	popup, cancelPopup := chromedp.NewContext(browser)
	defer cancelPopup()
	browsertest.Run(t, popup, "open the popup", chromedp.Navigate("chrome-extension://"+id+"/popup.html"))
	waitExtension(t, popup, "the proxy ready", func(s extensionState) bool { return s.Enabled && ready(s.State) })

	res, err := demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, nil)
	if err != nil {
		t.Fatalf("download: %v; extension %+v", err, readExtension(t, popup))
	}
	t.Logf("%d bytes intact through the extension, first byte after %v, %.2f MB/s",
		res.Bytes, res.FirstByte.Round(time.Millisecond), res.Throughput()/1e6)
	waitExtension(t, popup, "the person helped", func(s extensionState) bool { return s.Helped >= 1 })
	if got := browsertest.Run(t, popup, "read the popup", chromedp.Text(chromedp.CSS("#helped"))); got != "You have helped 1 person." {
		t.Errorf("the popup says %q", got)
	}

	browsertest.Run(t, popup, "switch the extension off", chromedp.Click(chromedp.CSS("#enabled")))
	waitExtension(t, popup, "the proxy stopped", func(s extensionState) bool { return !s.Enabled && !s.State.Running })
	if got := browsertest.Run(t, popup, "count offscreen documents", chromedp.Evaluate[int](
		`chrome.runtime.getContexts({contextTypes: ["OFFSCREEN_DOCUMENT"]}).then((c) => c.length)`, chromedp.EvalAwaitPromise)); got != 0 {
		t.Errorf("%d offscreen documents after switching off", got)
	}
	if got := browsertest.Run(t, popup, "read the popup", chromedp.Text(chromedp.CSS("#headline"))); got != "Off" {
		t.Errorf("the switched-off popup says %q", got)
	}
}

// pageLog returns the lines the test page logged.
func (b *browserProxy) pageLog(t *testing.T) string {
	t.Helper()
	return browsertest.Run(t, b.tab, "read the page log", chromedp.Evaluate[string](`document.getElementById("log").textContent`))
}

// warnings returns the warnings the page shows.
func (b *browserProxy) warnings(t *testing.T) string {
	t.Helper()
	return browsertest.Run(t, b.tab, "read the warnings", chromedp.Evaluate[string](`document.getElementById("warnings").textContent`))
}

// TestWebProxyBadBroker gives the browser proxy a broker that replies with
// garbage, a status carrying markup, and a match whose relay is outside the
// proxy's pattern, each followed by a "no match": the page logs each
// refusal with a fixed text (never the broker's), sends no answer for the
// refused relay, throws no exception, and keeps polling.
func TestWebProxyBadBroker(t *testing.T) {
	const peer = "PEER-TEXT"
	offer, err := json.Marshal(map[string]string{"type": "offer", "sdp": "v=0\r\nc=IN IP4 0.0.0.0\r\n"})
	if err != nil {
		t.Fatal(err)
	}
	outside, err := json.Marshal(map[string]any{"Status": "client match", "Offer": string(offer), "NAT": "unknown",
		"NextPoll": 1000, "RelayURL": "wss://relay." + peer + ".example/"})
	if err != nil {
		t.Fatal(err)
	}
	noMatch := `{"Status":"no match","Offer":"","NAT":"","NextPoll":1000,"RelayURL":""}`
	replies := []string{peer + "<b>not json", noMatch, `{"Status":"<script>` + peer + `</script>"}`, noMatch, string(outside), noMatch}
	var mu sync.Mutex
	polls, answers := 0, 0
	brokerSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		mu.Lock()
		defer mu.Unlock()
		switch r.URL.Path {
		case "/proxy":
			w.Write([]byte(replies[min(polls, len(replies)-1)]))
			polls++
		case "/answer":
			answers++
			w.Write([]byte(`{"Status":"success"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(brokerSrv.Close)
	node := testenv.LookPath(t, "node", "nodejs")
	out := filepath.Join(t.TempDir(), "webproxy")
	if b, err := exec.Command(node, filepath.Join("..", "webproxy", "build.mjs"), "-out", out, "-broker", brokerSrv.URL+"/",
		"-relay-pattern", "^127.0.0.1:*$", "-allow-private-relay", "-stun", "").CombinedOutput(); err != nil {
		t.Fatalf("build the browser proxy: %v\n%s", err, b)
	}
	b := startBrowserProxy(t, serveDir(t, filepath.Join(out, "web")), "")
	s := b.waitState(t, "every reply", func(s webProxyState) bool {
		mu.Lock()
		defer mu.Unlock()
		return polls > len(replies) && s.Broker == "ok"
	})
	if s.Failed != 1 {
		t.Errorf("%d sessions failed, want 1 (the relay outside the pattern)", s.Failed)
	}
	mu.Lock()
	if answers != 0 {
		t.Errorf("the proxy answered %d offers whose relay is outside its pattern", answers)
	}
	mu.Unlock()
	log := b.pageLog(t)
	for _, want := range []string{"poll failed: reply is not a valid message", "poll failed: reply has an unknown status",
		"relay refused: relay hostname does not match the accepted pattern"} {
		if !strings.Contains(log, want) {
			t.Errorf("the page did not log %q:\n%s", want, log)
		}
	}
	for _, p := range append(b.problems(), log) {
		if strings.Contains(p, peer) || strings.HasPrefix(p, "exception") {
			t.Errorf("page problem or broker text in the log: %s", p)
		}
	}
}

// TestWebProxyFaults runs one chain (Flurry's client, broker and relay)
// through the faults a browser proxy meets, with a capacity of one client:
// while it serves one, it does not poll; a client that vanishes mid-download
// ends its session and the proxy goes on polling; a relay that is down at
// start and a broker that goes down are shown as such.
func TestWebProxyFaults(t *testing.T) {
	if !inNetns(t, nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startBrowserChainOnly(t, ctx, browserRoles()[0], "-capacity", "1")
	web := serveDir(t, filepath.Join(c.build, "web"))
	b := startBrowserProxy(t, web, c.spki)
	b.waitState(t, "the proxy ready", ready)

	t.Run("capacity", func(t *testing.T) {
		// A download that reads one byte and waits keeps its session open.
		conn, err := demo.DialSOCKS5(ctx, c.SOCKSAddr, c.Target.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write([]byte("GET " + demo.FilePath + " HTTP/1.1\r\nHost: target\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, make([]byte, 1)); err != nil {
			t.Fatal(err)
		}
		b.waitState(t, "one client", func(s webProxyState) bool { return s.Clients == 1 })
		// The broker holds a poll for 10 s and the proxy polls every 2 s:
		// over 5 s a poll would have been seen.
		for range 10 {
			if got := brokerAvailable(t, c.Chain); got != "current snowflakes available: 0" {
				t.Fatalf("at capacity, the broker says %q; state %+v", got, b.state(t))
			}
			time.Sleep(500 * time.Millisecond)
		}
		if s := b.state(t); s.Clients != 1 {
			t.Fatalf("the session ended during the check: %+v", s)
		}
		conn.Close()
		b.waitState(t, "the session's end", func(s webProxyState) bool { return s.Clients == 0 })
	})

	t.Run("client vanishes", func(t *testing.T) {
		progress := &demo.Progress{}
		go demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, progress)
		b.waitState(t, "bytes to the client", func(s webProxyState) bool { return s.Clients == 1 && s.BytesToClient > 0 })
		c.Client.Kill()
		end := b.waitState(t, "the session's end", func(s webProxyState) bool { return s.Clients == 0 })
		if !end.Running || end.Broker != "ok" {
			t.Errorf("after the client vanished the proxy is %+v", end)
		}
		if got := brokerAvailable(t, c.Chain); got != "current snowflakes available: 1" {
			t.Errorf("after the session the broker says %q, want the proxy polling", got)
		}
	})

	t.Run("relay down", func(t *testing.T) {
		c.Relay.Kill()
		browsertest.Run(t, b.tab, "reload the page", chromedp.Reload())
		b.waitState(t, "the relay check", func(s webProxyState) bool { return s.Relay == "unreachable" })
		if w := b.warnings(t); !strings.Contains(w, "The relay cannot be reached") {
			t.Errorf("the page warns %q", w)
		}
	})

	t.Run("broker down", func(t *testing.T) {
		c.Broker.Kill()
		b.waitState(t, "a failed poll", func(s webProxyState) bool { return s.Broker == "unreachable" })
		if w := b.warnings(t); !strings.Contains(w, "The broker cannot be reached") {
			t.Errorf("the page warns %q", w)
		}
	})
	for _, p := range b.problems() {
		if strings.HasPrefix(p, "exception") {
			t.Errorf("page problem: %s", p)
		}
	}
}

// TestCensorLabWebProxy puts the client behind the lab's middlebox running
// dtls-ja4-block, the censor that drops DTLS flows whose ClientHello has
// pion's default fingerprint, and downloads through a Flurry proxy that
// sends pion's own hello (-covertdtls-config disable), then through the
// browser proxy in Chromium on the lab's outside: the browser, which
// answers and so sends the DTLS ClientHello, gets through where pion's
// default hello does not.
func TestCensorLabWebProxy(t *testing.T) {
	if testing.Short() {
		t.Skip("the censor lab takes minutes")
	}
	testenv.Root(t, "the censor lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	const program = "dtls-ja4-block"
	control := runLabCell(t, 900, labConfig{Name: "flurry-disable", Roles: Roles{}, Covert: "disable"}, program, nil, fl, sf)
	if control.Through {
		t.Errorf("pion's default hello got through %s", program)
	}
	t.Logf("pion's default hello: through=%v (%s), censor drops %d", control.Through, control.Error, control.CensorDrops)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path, err := netlab.ParseProfile(labProfile)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := netlab.New(ctx, netlab.Config{Name: "clwp", Up: path, Down: path, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	prog, err := censor.Parse(program, labOptions(lab, nil))
	if err != nil {
		t.Fatal(err)
	}
	lab.SetCensor(prog)
	// Chromium gathers candidates on the interface of the default route.
	ns := lab.Namespace(netlab.Outside)
	if out, err := exec.Command(lookCommand("ip"), "-n", ns, "route", "add", "default", "via", lab.ClientAddr().String()).CombinedOutput(); err != nil {
		t.Fatalf("default route on the outside: %v: %s", err, out)
	}
	relayTLS, spki := relayCertificate(t, t.TempDir(), lab.OutsideAddr(labMainAddr).AsSlice())
	c, err := StartChain(ctx, ChainConfig{Roles: Roles{}, Flurry: fl, Snowflake: sf, FileSize: labFileSize, Lab: lab,
		Dir: filepath.Join(t.TempDir(), "chain"), NoProxy: true, RelayTLS: relayTLS, NATProbeAllInterfaces: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	build := buildWebProxy(t, c)
	var web string
	if err := lab.Do(netlab.Outside, func() error {
		web = serveDir(t, filepath.Join(build, "web"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Chromium runs on the outside, where the broker, relay and NAT probe are.
	wrapper := filepath.Join(t.TempDir(), "chromium-outside")
	script := "#!/bin/sh\nexec " + lookCommand("ip") + " netns exec " + ns + " " + browsertest.ChromiumPath + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b := startBrowserProxy(t, web, spki, chromedp.ExecPath(wrapper))
	b.waitState(t, "the proxy ready", ready)
	dctx, dcancel := context.WithTimeout(ctx, labCellTimeout)
	defer dcancel()
	var fr demo.FetchResult
	err = c.InClient(func() error {
		var err error
		fr, err = demo.FetchTarget(dctx, c.SOCKSAddr, c.Target, nil)
		return err
	})
	if err != nil {
		t.Fatalf("the browser proxy did not get through %s: %v; page %+v\n%s", program, err, b.state(t), c.LogTails(20))
	}
	st := lab.Stats()
	t.Logf("the browser proxy got through %s: %d bytes intact, first byte after %v, %.2f MB/s, censor drops %d",
		program, fr.Bytes, fr.FirstByte.Round(time.Millisecond), fr.Throughput()/1e6, st.Up.CensorDropped+st.Down.CensorDropped)
}
