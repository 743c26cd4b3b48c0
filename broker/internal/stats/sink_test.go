package stats

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

func TestSink(t *testing.T) {
	r := newTestRecorder(t, Config{})
	s := r.Sink()
	ca := addr(t, "129.97.208.23")
	waiting := event.Proxy{Type: messages.ProxyTypeStandalone, NAT: messages.NATUnrestricted, Addr: ca, RelayPattern: true}
	matched := event.Proxy{Type: messages.ProxyTypeWebExt, NAT: messages.NATRestricted, Addr: addr(t, "129.97.208.24"), RelayPattern: true}
	gone := event.Proxy{Type: messages.ProxyTypeBadge, NAT: messages.NATUnknown, Addr: addr(t, "129.97.208.25")}

	s.ProxyPollStarted(waiting)
	s.ProxyPollStarted(matched)
	s.ProxyPollStarted(gone)
	if got := r.Available(); got.Total() != 3 {
		t.Errorf("available %d, want 3", got.Total())
	}
	s.ProxyPollEnded(matched, event.ProxyMatched)
	s.ProxyPollEnded(gone, event.ProxyGone)
	if got := r.Available(); got.Total() != 1 || got.Count("standalone", "unrestricted") != 1 {
		t.Errorf("available %+v, want one standalone unrestricted", got)
	}
	s.ProxyPollEnded(waiting, event.ProxyIdle)
	s.ProxyPollRejected(event.Proxy{Type: "unknown", NAT: "unknown", Addr: ca})
	s.ClientPollEnded(event.Client{NAT: messages.NATRestricted, Addr: ca, Method: event.MethodHTTP}, event.ClientMatched)
	s.ClientPollEnded(event.Client{NAT: messages.NATUnknown, Addr: ca, Method: event.MethodAMPCache}, event.ClientDenied)
	s.ClientPollEnded(event.Client{NAT: messages.NATUnknown, Method: event.MethodSQS}, event.ClientTimeout)
	s.ClientPollEnded(event.Client{NAT: messages.NATUnknown, Addr: ca, Method: event.MethodAMPCache}, event.ClientBadRequest)
	s.ClientPollEnded(event.Client{NAT: messages.NATUnknown, Addr: ca, Method: event.MethodHTTP}, event.ClientUnknownBridge)
	s.ProxyAnswered(messages.ProxyTypeWebExt, event.AnswerSuccess)
	s.ProxyAnswered("", event.AnswerClientGone)
	s.ProxyUnanswered(messages.ProxyTypeBadge)
	s.ProxyUnanswered("<b>")
	s.RequestRejected(event.EndpointProxy, event.ReasonRateLimited, ca)
	s.RequestRejected(event.EndpointAnswer, event.ReasonTooLarge, netip.Addr{})

	fams := scrape(t, r)
	for _, c := range []struct {
		name   string
		labels []string
	}{
		{"flurry_broker_proxy_polls_total", []string{"nat", "restricted", "type", "webext", "status", "matched"}},
		{"flurry_broker_proxy_polls_total", []string{"nat", "unrestricted", "type", "standalone", "status", "idle"}},
		{"flurry_broker_proxy_relay_pattern_rejections_total", []string{"nat", "unknown", "type", "unknown"}},
		{"flurry_broker_proxy_relay_pattern_polls_total", []string{"nat", "unknown", "type", "unknown", "relay_pattern", "absent"}},
		{"flurry_broker_proxy_ips_total", []string{"type", "badge", "nat", "unknown", "cc", "CA"}},
		{"flurry_broker_client_polls_total", []string{"nat", "restricted", "status", "matched", "rendezvous_method", "http", "cc", "CA"}},
		{"flurry_broker_client_polls_total", []string{"nat", "unknown", "status", "denied", "rendezvous_method", "ampcache", "cc", "CA"}},
		{"flurry_broker_client_polls_total", []string{"nat", "unknown", "status", "timeout", "rendezvous_method", "sqs", "cc", "??"}},
		{"flurry_broker_rejected_requests_total", []string{"endpoint", "amp", "reason", "malformed"}},
		{"flurry_broker_rejected_requests_total", []string{"endpoint", "client", "reason", "unknown_bridge"}},
		{"flurry_broker_rejected_requests_total", []string{"endpoint", "answer", "reason", "too_large"}},
		{"flurry_broker_rate_limited_requests_total", []string{"endpoint", "proxy"}},
		{"flurry_broker_proxy_answers_total", []string{"type", "webext", "status", "success"}},
		{"flurry_broker_proxy_answers_total", []string{"type", "unknown", "status", "client_gone"}},
		{"flurry_broker_proxy_unanswered_total", []string{"type", "badge"}},
		{"flurry_broker_proxy_unanswered_total", []string{"type", "unknown"}},
	} {
		if v, ok := value(fams, c.name, c.labels...); v != 8 {
			t.Errorf("%s%v = %v (found %v), want 8", c.name, c.labels, v, ok)
		}
	}
	if _, ok := value(fams, "flurry_broker_proxy_polls_total", "nat", "unknown", "type", "badge", "status", "idle"); ok {
		t.Error("a gone proxy was counted as idle")
	}

	got := descriptor(t, r)
	for _, line := range []string{"snowflake-ips CA=3", "snowflake-ips-total 3", "snowflake-idle-count 8",
		"snowflake-proxy-poll-with-relay-url-count 8", "snowflake-proxy-poll-without-relay-url-count 8",
		"snowflake-proxy-rejected-for-relay-url-count 8", "client-denied-count 8", "client-restricted-denied-count 8",
		"client-snowflake-match-count 8", "client-snowflake-timeout-count 8", "client-http-ips CA=8",
		"client-ampcache-ips CA=8", "client-sqs-ips ??=8", "snowflake-ips-nat-restricted 1"} {
		if !strings.Contains(got, "\n"+line+"\n") {
			t.Errorf("descriptor lacks %q:\n%s", line, got)
		}
	}
}
