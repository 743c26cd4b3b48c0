package broker_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/messages"
)

// wantU is the cluster subject of unrestricted-NAT client polls for
// Snowflake's default bridge (see broker/internal/cluster).
const wantU = "flurry.broker.want.u.2b280b23e1107bb62abfc40ddcc8824814f80a72"

// rawNATS connects a bare nats.go client to the test's server: a stranger
// on the brokers' NATS, as far as the brokers can tell.
func rawNATS(t *testing.T, addr string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// clusterRequest is a client poll request on the cluster's subject, as an
// instance sends it, with the budget header set to budget.
func clusterRequest(body []byte, budget string) *nats.Msg {
	msg := nats.NewMsg(wantU)
	msg.Data = body
	msg.Header.Set("Flurry-Budget-Ms", budget)
	return msg
}

// servedBad is instance b1's count of requests from NATS refused as bad.
func servedBad(t *testing.T, b *testBroker) int {
	t.Helper()
	const series = `flurry_broker_cluster_served_total{instance="b1",result="bad_message"} `
	for l := range strings.SplitSeq(string(b.prometheus(t)), "\n") {
		if v, ok := strings.CutPrefix(l, series); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

// junkOffer is a session description messages accepts (so that the poll
// decodes) but no WebRTC proxy can answer.
func junkOffer(t *testing.T, typ, sdp string) string {
	t.Helper()
	s, err := messages.SessionDescription{Type: typ, SDP: sdp}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestClusterJunkFromNATS: client polls pushed straight onto the cluster's
// subject by a stranger are checked as POST /client checks them: a junk
// offer, a bad reply subject or an oversized body never reaches the
// waiting proxy and strikes nobody; the proxy then takes the next good
// offer.
func TestClusterJunkFromNATS(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	natsServer(t, "nats", addr, "")
	b := clusterBrokers(t, 1, "nats://"+addr, broker.Config{ClientTimeout: 2 * time.Second})[0]
	nc := rawNATS(t, addr)

	proxyRes := async(func() response {
		return b.post(t, "/proxy", proxyPoll(t, "trusted", messages.NATUnrestricted, 0, ptr(snowflakeP)))
	})
	b.rec.waitStarted(t, 1)
	waitFor(t, "instance 1 takes requests for its pool", 10*time.Second, func() bool { return b.ClusterPools() > 0 })

	fp := messages.DefaultBridgeFingerprint
	noData := "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\n"
	noFingerprint := strings.Replace(dataChannelSDP("x", "a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host"), "a=fingerprint:", "a=fingerprin:", 1)
	shortPwd := strings.Replace(dataChannelSDP("x"), "a=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw", "a=ice-pwd:short", 1)
	badCandidate := dataChannelSDP("x", "a=candidate:junk")
	junk := []*nats.Msg{
		clusterRequest(clientPoll(t, junkOffer(t, "offer", "v=0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"), messages.NATUnrestricted, fp), "2000"),
		clusterRequest(clientPoll(t, junkOffer(t, "offer", noData), messages.NATUnrestricted, fp), "2000"),
		clusterRequest(clientPoll(t, junkOffer(t, "offer", noFingerprint), messages.NATUnrestricted, fp), "2000"),
		clusterRequest(clientPoll(t, junkOffer(t, "offer", shortPwd), messages.NATUnrestricted, fp), "2000"),
		clusterRequest(clientPoll(t, junkOffer(t, "offer", badCandidate), messages.NATUnrestricted, fp), "2000"),
		clusterRequest(clientPoll(t, sd(t, "answer", "x"), messages.NATUnrestricted, fp), "2000"),
		clusterRequest(append([]byte("1.0\n"), strings.Repeat(" ", messages.MaxBodySize)...), "2000"),
	}
	// A good offer, but the reply would go where the stranger chose.
	elsewhere := clusterRequest(clientPoll(t, sd(t, "offer", "elsewhere"), messages.NATUnrestricted, fp), "2000")
	elsewhere.Reply = "flurry.broker.answer.00"
	junk = append(junk, elsewhere)
	sub, err := nc.SubscribeSync(nats.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range junk {
		if m.Reply == "" {
			m.Reply = sub.Subject
		}
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for servedBad(t, b) != len(junk) {
		select {
		case res := <-proxyRes:
			t.Fatalf("the waiting proxy was handed a junk request: %.300s", res.body)
		case <-time.After(20 * time.Millisecond): // polling a metric without an event to wait on
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d junk requests refused within 10 s", servedBad(t, b), len(junk))
		}
	}

	// The proxy still waits, and takes the next good offer.
	good := sd(t, "offer", "good")
	reply := make(chan *nats.Msg, 1)
	go func() {
		m, err := nc.RequestMsg(clusterRequest(clientPoll(t, good, messages.NATUnrestricted, fp), "2000"), 5*time.Second)
		if err != nil {
			t.Errorf("good request: %v", err)
		}
		reply <- m
	}()
	res := <-proxyRes
	if resp, err := messages.DecodeProxyPollResponse(res.body); err != nil || resp.Offer != good {
		t.Fatalf("proxy poll: %v %s, want the good offer", err, res.body)
	}
	expect(t, "answer", b.post(t, "/answer", proxyAnswer(t, "trusted", sd(t, "answer", "good"))), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
	if m := <-reply; m != nil {
		if resp, err := messages.DecodeClientPollResponse(m.Data); err != nil || resp.Answer != sd(t, "answer", "good") {
			t.Errorf("reply to the good request: %v %s", err, m.Data)
		}
	}
	if n, _, err := sub.Pending(); err != nil || n != 0 {
		t.Errorf("junk requests got %d replies (%v)", n, err)
	}
	b.rec.mu.Lock()
	defer b.rec.mu.Unlock()
	if len(b.rec.unanswered) != 0 {
		t.Errorf("proxies struck: %v", b.rec.unanswered)
	}
}

// TestClusterBudgetCapped: a request from NATS that claims a minute holds
// a local proxy no longer than the broker's client timeout.
func TestClusterBudgetCapped(t *testing.T) {
	addr := freeAddrs(t, 1)[0]
	natsServer(t, "nats", addr, "")
	b := clusterBrokers(t, 1, "nats://"+addr, broker.Config{ClientTimeout: time.Second})[0]
	nc := rawNATS(t, addr)
	proxyRes := async(func() response {
		return b.post(t, "/proxy", proxyPoll(t, "silent", messages.NATUnrestricted, 0, ptr(snowflakeP)))
	})
	b.rec.waitStarted(t, 1)
	waitFor(t, "instance 1 takes requests for its pool", 10*time.Second, func() bool { return b.ClusterPools() > 0 })
	start := time.Now()
	m, err := nc.RequestMsg(clusterRequest(clientPoll(t, sd(t, "offer", "long"), messages.NATUnrestricted, messages.DefaultBridgeFingerprint), "60000"), 10*time.Second)
	if err != nil {
		t.Fatalf("a 60 s budget against a 1 s client timeout: no reply within 10 s (%v)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the reply took %v, want about the 1 s client timeout", d)
	}
	if resp, err := messages.DecodeClientPollResponse(m.Data); err != nil || resp.Error != messages.StrTimedOut {
		t.Errorf("reply %s (%v), want a timeout", m.Data, err)
	}
	if resp, err := messages.DecodeProxyPollResponse((<-proxyRes).body); err != nil || resp.Status != messages.StatusClientMatch {
		t.Errorf("proxy poll: %+v %v, want a match", resp, err)
	}
}

// TestNATSLinkExposure: a plaintext NATS link to a server that is not on
// loopback, without credentials, is refused unless NATSInsecure says so.
// Only the configuration is checked: nothing connects anywhere.
func TestNATSLinkExposure(t *testing.T) {
	const remote = "192.0.2.1:4222" // TEST-NET-1, never dialled
	for _, tc := range []struct {
		name string
		cfg  broker.Config
		ok   bool
	}{
		{"plaintext remote", broker.Config{NATS: "nats://" + remote}, false},
		{"no scheme remote", broker.Config{NATS: remote}, false},
		{"websocket remote", broker.Config{NATS: "ws://" + remote}, false},
		{"loopback then remote", broker.Config{NATS: "nats://127.0.0.1:4222, nats://" + remote}, false},
		{"host name", broker.Config{NATS: "nats://nats.example:4222"}, false},
		{"plaintext remote, insecure", broker.Config{NATS: "nats://" + remote, NATSInsecure: true}, true},
		{"tls", broker.Config{NATS: "tls://" + remote}, true},
		{"one tls URL", broker.Config{NATS: "nats://" + remote + ",tls://192.0.2.2:4222"}, true},
		{"tls CA", broker.Config{NATS: "nats://" + remote, NATSTLSCA: "ca.pem"}, true},
		{"password", broker.Config{NATS: "nats://broker:secret@" + remote}, true},
		{"token", broker.Config{NATS: "nats://s3cr3t@" + remote}, true},
		{"creds file", broker.Config{NATS: "nats://" + remote, NATSCreds: "broker.creds"}, true},
		{"nkey file", broker.Config{NATS: "nats://" + remote, NATSNKey: "broker.nk"}, true},
		{"loopback v4", broker.Config{NATS: "nats://127.0.0.1:4222"}, true},
		{"loopback v6", broker.Config{NATS: "nats://[::1]:4222"}, true},
		{"localhost", broker.Config{NATS: "nats://localhost:4222,127.0.0.2:4222"}, true},
		{"creds and nkey", broker.Config{NATS: "tls://" + remote, NATSCreds: "a", NATSNKey: "b"}, false},
		{"nkey without NATS", broker.Config{NATSNKey: "b"}, false},
		{"bad scheme", broker.Config{NATS: "http://127.0.0.1:4222"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := broker.CheckConfig(tc.cfg)
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, broker.ErrInvalidConfig) {
				t.Errorf("CheckConfig = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
