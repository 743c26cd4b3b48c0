package broker_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/messages"
)

// natsServer starts a real nats-server (Debian's package) on loopback for
// the test; with routes it is one node of a NATS cluster. It is stopped
// when the test ends, after the brokers (register it first).
func natsServer(t *testing.T, name, addr, clusterAddr string, routes ...string) *childproc.Process {
	t.Helper()
	path, err := demo.FindTool(demo.NATSServerPath, "nats-server", "nats-server")
	if err != nil {
		testenv.Missing(t, "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := demo.StartNATS(ctx, demo.NATSConfig{Path: path, Name: name, Dir: t.TempDir(), Addr: addr, ClusterAddr: clusterAddr, Routes: routes})
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	t.Cleanup(func() { p.Kill() })
	return p
}

func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	a, err := demo.FreeAddrs(n)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// clusterBrokers starts n brokers joined through natsURL, served on
// loopback with parked polls, with Snowflake's bridge list.
func clusterBrokers(t *testing.T, n int, natsURL string, cfg broker.Config) []*testBroker {
	t.Helper()
	cfg.BridgeListPath = snowflakeBridges(t)
	if cfg.ProxyHold == 0 {
		cfg.ProxyHold = longHold
	}
	cfg.NATS = natsURL
	out := make([]*testBroker, n)
	for i := range out {
		cfg.Instance = fmt.Sprintf("b%d", i+1)
		out[i] = newTestBroker(t, cfg)
	}
	return out
}

// waitFor polls cond until it holds or the loose deadline passes.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond) // polling state without an event to wait on
	}
}

// TestClusterGoldenCrossInstance: the proxy polls instance 1, the client
// polls instance 2, the answer is posted to instance 3; every reply is
// Snowflake's byte for byte, and the match crossed instances.
func TestClusterGoldenCrossInstance(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	natsServer(t, "nats", addr, "")
	bs := clusterBrokers(t, 3, "nats://"+addr, broker.Config{})
	for _, b := range bs {
		waitFor(t, "cluster link up", 10*time.Second, b.Healthy)
	}

	// No proxy anywhere: "no responders", answered at once.
	start := time.Now()
	expect(t, "client without proxies", bs[1].post(t, "/client", vector(t, "client-poll-request-1.0.txt")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
	if d := time.Since(start); d > 2*time.Second { // the client timeout is 5 s
		t.Errorf("no proxies anywhere took %v", d)
	}

	for round := range 2 {
		proxyRes := async(func() response { return bs[0].post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")) })
		bs[0].rec.waitStarted(t, 1)
		waitFor(t, "instance 1 takes requests for its pool", 10*time.Second, func() bool { return bs[0].ClusterPools() > 0 })
		clientRes := async(func() response { return bs[1].post(t, "/client", vector(t, "client-poll-request-1.0.txt")) })
		expect(t, fmt.Sprint("proxy poll ", round), <-proxyRes, http.StatusOK, vector(t, "proxy-poll-response-match.json"))
		expect(t, "answer", bs[2].post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
		expect(t, "client", <-clientRes, http.StatusOK, vector(t, "client-poll-response-answer.json"))
		expect(t, "repeated answer", bs[2].post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-client-gone.json"))
		waitFor(t, "instance 1 leaves the pool", 10*time.Second, func() bool { return bs[0].ClusterPools() == 0 })
	}

	// The Prometheus text of each instance carries its name.
	body := string(bs[1].prometheus(t))
	if !strings.Contains(body, `flurry_broker_cluster_requests_total{instance="b2",result="matched"} 2`) {
		t.Errorf("instance 2 metrics lack two cross-instance matches:\n%s", grepLines(body, "flurry_broker_cluster_"))
	}
	body = string(bs[0].prometheus(t))
	if !strings.Contains(body, `flurry_broker_cluster_served_total{instance="b1",result="matched"} 2`) {
		t.Errorf("instance 1 metrics lack two served matches:\n%s", grepLines(body, "flurry_broker_cluster_"))
	}
}

// TestClusterTimeout: a proxy on instance 1 that never answers leaves the
// client of instance 2 with Snowflake's timeout reply within its budget.
func TestClusterTimeout(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	natsServer(t, "nats", addr, "")
	bs := clusterBrokers(t, 2, "nats://"+addr, broker.Config{ClientTimeout: time.Second})
	proxyRes := async(func() response { return bs[0].post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")) })
	bs[0].rec.waitStarted(t, 1)
	waitFor(t, "instance 1 takes requests for its pool", 10*time.Second, func() bool { return bs[0].ClusterPools() > 0 })
	start := time.Now()
	clientRes := async(func() response { return bs[1].post(t, "/client", vector(t, "client-poll-request-1.0.txt")) })
	expect(t, "proxy poll", <-proxyRes, http.StatusOK, vector(t, "proxy-poll-response-match.json"))
	expect(t, "client", <-clientRes, http.StatusOK, vector(t, "client-poll-response-timeout.json"))
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("a 1 s client budget took %v", d)
	}
	// The owner struck the silent proxy.
	bs[0].rec.mu.Lock()
	n := len(bs[0].rec.unanswered)
	bs[0].rec.mu.Unlock()
	if n != 1 {
		t.Errorf("instance 1 recorded %d unanswered proxies, want 1", n)
	}
	expect(t, "late answer", bs[1].post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-client-gone.json"))
}

// crossMatch runs one rendezvous: a proxy polls from (its hold: 5 s), a
// client polls to, the proxy posts its answer to via. It reports whether
// the client got the proxy's answer.
func crossMatch(t *testing.T, from, to, via *testBroker, sid string) bool {
	t.Helper()
	proxyRes := async(func() response {
		return from.post(t, "/proxy", proxyPoll(t, sid, messages.NATUnrestricted, 0, ptr(snowflakeP)))
	})
	ok := pollUntil(5*time.Second, func() bool { return from.ClusterPools() > 0 })
	var client <-chan response
	if ok {
		client = async(func() response {
			return to.post(t, "/client", clientPoll(t, sd(t, "offer", sid), messages.NATUnrestricted, messages.DefaultBridgeFingerprint))
		})
	}
	pr := <-proxyRes
	if client == nil {
		return false
	}
	if resp, err := messages.DecodeProxyPollResponse(pr.body); err == nil && resp.Status == messages.StatusClientMatch {
		via.post(t, "/answer", proxyAnswer(t, sid, sd(t, "answer", sid)))
	}
	cr, err := messages.DecodeClientPollResponse((<-client).body)
	return err == nil && cr.Answer == sd(t, "answer", sid)
}

// pollUntil polls cond until it holds (true) or d passes (false).
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling state without an event to wait on
	}
	return true
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestClusterNATSRestart: while NATS is down /healthz says 503 and each
// instance still matches its own proxies; once NATS is back, matching
// across instances resumes within 5 s without restarting the brokers.
func TestClusterNATSRestart(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	srv := natsServer(t, "nats", addr, "")
	bs := clusterBrokers(t, 2, "nats://"+addr, broker.Config{ProxyHold: 5 * time.Second})
	for _, b := range bs {
		waitFor(t, "cluster link up", 10*time.Second, b.Healthy)
	}
	if !crossMatch(t, bs[0], bs[1], bs[1], "before") {
		t.Fatal("no cross-instance match before the restart")
	}
	expect(t, "healthz up", bs[0].do(t, http.MethodGet, "/healthz", nil, nil), http.StatusOK, []byte("ok\n"))

	srv.Kill()
	for _, b := range bs {
		waitFor(t, "cluster link down", 10*time.Second, func() bool { return !b.Healthy() })
	}
	if got := bs[0].do(t, http.MethodGet, "/healthz", nil, nil); got.status != http.StatusServiceUnavailable {
		t.Errorf("healthz with NATS down: %d, want 503", got.status)
	}
	// Each instance still matches its own proxies.
	proxyRes := async(func() response { return bs[0].post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")) })
	waitFor(t, "local proxy waiting", 10*time.Second, func() bool { s := bs[0].Stats(); return s.WaitingRestricted+s.WaitingUnrestricted > 0 })
	clientRes := async(func() response { return bs[0].post(t, "/client", vector(t, "client-poll-request-1.0.txt")) })
	expect(t, "local proxy poll", <-proxyRes, http.StatusOK, vector(t, "proxy-poll-response-match.json"))
	expect(t, "local answer", bs[0].post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
	expect(t, "local client", <-clientRes, http.StatusOK, vector(t, "client-poll-response-answer.json"))
	// Another instance's proxy is out of reach: at once "no proxies".
	expect(t, "client while NATS is down", bs[1].post(t, "/client", vector(t, "client-poll-request-1.0.txt")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	// A proxy keeps polling instance 1; clients try instance 2 until one
	// is matched (a client that finds no proxy is answered at once).
	ctx, stopProxy := context.WithCancel(ctx)
	proxyDone := make(chan struct{})
	go func() {
		defer close(proxyDone)
		for i := 0; ctx.Err() == nil; i++ {
			sid := fmt.Sprint("after", i)
			body, ok := rawPost(ctx, bs[0], "/proxy", proxyPoll(t, sid, messages.NATUnrestricted, 0, ptr(snowflakeP)))
			if !ok {
				continue
			}
			if resp, err := messages.DecodeProxyPollResponse(body); err == nil && resp.Status == messages.StatusClientMatch {
				rawPost(ctx, bs[0], "/answer", proxyAnswer(t, sid, sd(t, "answer", "after")))
			}
		}
	}()
	for {
		res := bs[1].post(t, "/client", clientPoll(t, sd(t, "offer", "after"), messages.NATUnrestricted, messages.DefaultBridgeFingerprint))
		if cr, err := messages.DecodeClientPollResponse(res.body); err == nil && cr.Answer == sd(t, "answer", "after") {
			break
		}
		if time.Since(restarted) > 20*time.Second {
			t.Fatal("no cross-instance match 20 s after NATS came back")
		}
		time.Sleep(50 * time.Millisecond) // a client's retry
	}
	if d := time.Since(restarted); d > 5*time.Second {
		t.Errorf("cross-instance matching resumed %v after NATS came back, want within 5 s", d)
	} else {
		t.Logf("cross-instance matching resumed %v after NATS came back", d.Round(time.Millisecond))
	}
	stopProxy()
	<-proxyDone
	expect(t, "healthz up again", bs[1].do(t, http.MethodGet, "/healthz", nil, nil), http.StatusOK, []byte("ok\n"))
}

// TestClusterNATSNodeKilled: brokers on a three-node NATS cluster keep
// matching across instances when the node one of them uses is killed.
func TestClusterNATSNodeKilled(t *testing.T) {
	a := freeAddrs(t, 6)
	clients, routes := a[:3], a[3:]
	var nodes []*childproc.Process
	for i := range 3 {
		var others []string
		for j, r := range routes {
			if j != i {
				others = append(others, r)
			}
		}
		nodes = append(nodes, natsServer(t, fmt.Sprintf("nats%d", i+1), clients[i], routes[i], others...))
	}
	// Each broker lists every node, its own first.
	var bs []*testBroker
	for i := range 3 {
		var urls []string
		for j := range 3 {
			urls = append(urls, "nats://"+clients[(i+j)%3])
		}
		cfg := broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: 5 * time.Second, NATS: strings.Join(urls, ","), Instance: fmt.Sprintf("b%d", i+1)}
		bs = append(bs, newTestBroker(t, cfg))
	}
	for _, b := range bs {
		waitFor(t, "cluster link up", 10*time.Second, b.Healthy)
	}
	// Routes and interest between nodes take a moment to form.
	waitFor(t, "a match across instances on different nodes", 20*time.Second, func() bool { return crossMatch(t, bs[0], bs[1], bs[2], "warm") })

	// Kill the node broker 1 is connected to (nats.go picks one at random).
	on := bs[0].ClusterServer()
	killed := -1
	for i, c := range clients {
		if on == "nats://"+c {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatalf("broker 1 is connected to %q, not a node of the test", on)
	}
	nodes[killed].Kill()
	// Nothing beyond latency: once the brokers have moved to the other
	// nodes (well under a second), every rendezvous is matched.
	for _, b := range bs {
		waitFor(t, "every broker on a live node", 10*time.Second, func() bool { s := b.ClusterServer(); return s != "" && s != on })
	}
	for i := range 5 {
		if !crossMatch(t, bs[i%3], bs[(i+1)%3], bs[(i+2)%3], fmt.Sprint("killed", i)) {
			t.Errorf("rendezvous %d after the node was killed: not matched", i)
		}
	}
}

// rawPost posts body to b's path under ctx and returns the response body;
// ok is false on a transport error (for goroutines, which cannot fail the
// test).
func rawPost(ctx context.Context, b *testBroker, path string, body []byte) ([]byte, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, false
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return out, err == nil
}
