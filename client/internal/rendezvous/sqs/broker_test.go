package sqs_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/client/internal/rendezvous/sqs"
	"github.com/flurrypt/flurry/common/sqscreds"
	"github.com/flurrypt/flurry/internal/testkit/sqstest"
	"github.com/flurrypt/flurry/messages"
)

// TestBrokerRendezvous runs the client's SQS exchange against Flurry's
// broker reading the same local SQS server, with a proxy that polls the
// broker over HTTP and answers.
func TestBrokerRendezvous(t *testing.T) {
	const keyID, secret = "AKIDE2E", "secret"
	srv := sqstest.New(sqstest.Config{AccessKeyID: keyID})
	tr := &http.Transport{}
	defer func() {
		srv.Close()
		tr.CloseIdleConnections()
	}()

	b, err := broker.New(broker.Config{ProxyHold: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(b.Handler())
	defer hs.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- b.RunSQS(ctx, broker.SQSConfig{
			QueueName: "snowflake-broker", Region: "us-east-1", Endpoint: srv.URL,
			AccessKeyID: keyID, SecretAccessKey: secret, Transport: tr,
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunSQS: %v", err)
		}
	}()
	waitCtx, waitCancel := context.WithTimeout(ctx, 20*time.Second)
	defer waitCancel()
	if err := srv.WaitUntil(waitCtx, func() bool { _, ok := srv.Messages("snowflake-broker"); return ok }); err != nil {
		t.Fatal("no broker queue:", err)
	}

	creds, err := sqscreds.Credentials{AccessKeyID: keyID, SecretKey: secret}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	r, err := sqs.New(sqs.Config{
		QueueURL: srv.QueueURL("snowflake-broker"), Credentials: creds, Endpoint: srv.URL,
		Transport: tr, PollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}

	offer := sessionDescription(t, "offer")
	answer := sessionDescription(t, "answer")
	proxyDone := make(chan struct{})
	go func() {
		defer close(proxyDone)
		runProxy(t, hs.URL, offer, answer)
	}()
	defer func() { <-proxyDone }()

	req, err := messages.ClientPollRequest{Offer: offer, NAT: messages.NATRestricted}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Until the proxy's poll has reached the broker, the broker has no
	// proxy: retry then, as a client does.
	for attempt := 0; ; attempt++ {
		body, err := r.Exchange(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := messages.DecodeClientPollResponse(body)
		if err != nil {
			t.Fatalf("broker reply %q: %v", body, err)
		}
		if resp.Error == messages.StrNoProxies && attempt < 1000 {
			continue
		}
		if resp.Error != "" || resp.Answer != answer {
			t.Fatalf("broker reply %+v, want the proxy's answer", resp)
		}
		break
	}
	// The client deleted its queue, the broker its message.
	if err := srv.WaitUntil(waitCtx, func() bool {
		m, _ := srv.Messages("snowflake-broker")
		return len(m) == 0
	}); err != nil {
		t.Fatal("broker message not deleted:", err)
	}
	if q := srv.Queues(); len(q) != 1 {
		t.Errorf("queues after the rendezvous: %v", q)
	}
}

// runProxy polls the broker once as a proxy and answers the client's
// offer.
func runProxy(t testing.TB, brokerURL, wantOffer, answer string) {
	pattern := ""
	poll, err := messages.ProxyPollRequest{Sid: "e2eproxy", Type: messages.ProxyTypeStandalone, NAT: messages.NATUnrestricted, AcceptedRelayPattern: &pattern}.Encode()
	if err != nil {
		t.Error(err)
		return
	}
	body, err := post(brokerURL+"/proxy", poll)
	if err != nil {
		t.Error(err)
		return
	}
	resp, err := messages.DecodeProxyPollResponse(body)
	if err != nil || resp.Status != messages.StatusClientMatch || resp.Offer != wantOffer {
		t.Errorf("proxy poll: %q (%v)", body, err)
		return
	}
	ans, err := messages.ProxyAnswerRequest{Sid: "e2eproxy", Answer: answer}.Encode()
	if err != nil {
		t.Error(err)
		return
	}
	if body, err = post(brokerURL+"/answer", ans); err != nil {
		t.Error(err)
		return
	}
	if r, err := messages.DecodeProxyAnswerResponse(body); err != nil || r.Status != messages.StatusSuccess {
		t.Errorf("answer: %q (%v)", body, err)
	}
}

func post(url string, body []byte) ([]byte, error) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

func sessionDescription(t testing.TB, typ string) string {
	t.Helper()
	// A data channel offer (the broker refuses offers no proxy could
	// answer), tagged with typ.
	s, err := messages.SessionDescription{Type: typ, SDP: "v=0\r\no=- 7207834799972382898 1795978629 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
		"a=fingerprint:sha-256 E6:19:09:28:58:5F:E3:26:C7:18:13:B6:08:8D:49:E9:72:10:E7:5F:09:DB:B4:CD:51:71:56:D3:14:22:05:9B\r\n" +
		"a=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=setup:actpass\r\na=mid:0\r\n" +
		"a=sctp-port:5000\r\na=ice-ufrag:YOnMbdqrylXCBgky\r\na=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\n" +
		"a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host\r\n" +
		"a=tag:" + typ + "\r\n"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
