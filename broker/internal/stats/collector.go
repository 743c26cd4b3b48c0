package stats

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// Metric names share this prefix (Prometheus namespace "flurry", subsystem
// "broker").
const metricPrefix = "flurry_broker_"

// descs are the Recorder's metric descriptions.
type descs struct {
	proxyPolls, relayPolls, relayRejections, answers, unanswered, proxyIPs,
	untrackedIPs, available, clientPolls, rateLimited, rejected, durations,
	connsRefused, acceptErrors *prometheus.Desc
}

func newDescs() descs {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(metricPrefix+name, help, labels, nil)
	}
	const rounded = ", rounded up to a multiple of 8"
	return descs{
		proxyPolls: d("proxy_polls_total",
			"Proxy polls that ended, by NAT type, proxy type and status (idle: no client, matched: got a client offer)"+rounded,
			"nat", "type", "status"),
		relayPolls: d("proxy_relay_pattern_polls_total",
			"Well-formed proxy polls by whether they carried an accepted relay pattern (present or absent)"+rounded,
			"nat", "type", "relay_pattern"),
		relayRejections: d("proxy_relay_pattern_rejections_total",
			"Proxy polls refused because their accepted relay pattern does not cover the broker's bridges"+rounded,
			"nat", "type"),
		answers: d("proxy_answers_total",
			"Proxy answers by status (success: delivered, client_gone: no client waiting)"+rounded,
			"type", "status"),
		unanswered: d("proxy_unanswered_total",
			"Client offers a proxy took and had not answered when the client's time ran out (each a strike against the proxy's address), by proxy type"+rounded,
			"type"),
		proxyIPs: d("proxy_ips_total",
			"New (proxy address, type, NAT type) combinations per descriptor period, by country"+rounded,
			"type", "nat", "cc"),
		untrackedIPs: d("proxy_ips_untracked_total",
			"Proxy addresses not counted as unique because the period's address set was full"+rounded),
		available: d("available_proxies",
			"Proxies currently waiting for a client, by type and NAT type",
			"type", "nat"),
		clientPolls: d("client_polls_total",
			"Client rendezvous by NAT type, status (matched, denied, timeout), rendezvous method and country"+rounded,
			"nat", "status", "rendezvous_method", "cc"),
		rateLimited: d("rate_limited_requests_total",
			"Requests refused by the per-address rate limit, by endpoint"+rounded,
			"endpoint"),
		rejected: d("rejected_requests_total",
			"Requests refused before they could be understood, by endpoint and reason"+rounded,
			"endpoint", "reason"),
		connsRefused: d("connections_refused_total",
			"Connections closed at accept, by reason (addr_limit: the address, IPv6 /64, held -max-conns-per-addr connections)"+rounded,
			"reason"),
		acceptErrors: d("accept_errors_total",
			"Failed accepts, by listener (rendezvous, metrics) and error (no_files: out of file descriptors, EMFILE or ENFILE; other)"+rounded,
			"listener", "error"),
		durations: d("request_duration_seconds",
			"Time to answer a request, by endpoint (bucket counts and count rounded up to a multiple of 8)",
			"endpoint"),
	}
}

// Describe implements prometheus.Collector.
func (r *Recorder) Describe(ch chan<- *prometheus.Desc) {
	d := &r.descs
	for _, desc := range []*prometheus.Desc{d.proxyPolls, d.relayPolls, d.relayRejections, d.answers, d.unanswered,
		d.proxyIPs, d.untrackedIPs, d.available, d.clientPolls, d.rateLimited, d.rejected, d.durations,
		d.connsRefused, d.acceptErrors} {
		ch <- desc
	}
}

// counter emits a counter rounded up to a multiple of 8; series that are
// still zero are left out.
func counter(ch chan<- prometheus.Metric, desc *prometheus.Desc, n uint64, labels ...string) {
	if n == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(binCount(n)), labels...)
}

// Collect implements prometheus.Collector. It copies the counts under the
// lock and builds the metrics outside it.
func (r *Recorder) Collect(ch chan<- prometheus.Metric) {
	var c collected
	r.mu.Lock()
	c.proxyPolls = r.proxyPolls
	c.relayPolls = r.relayPolls
	c.relayRejections = r.relayRejections
	c.answers = r.answers
	c.unanswered = r.unanswered
	c.available = r.available
	c.untrackedIPs = r.untrackedIPs
	c.rateLimited = r.rateLimited
	c.rejected = r.rejected
	c.connsRefused = r.connsRefused
	c.acceptErrors = r.acceptErrors
	c.durations = r.durations
	c.proxyIPs = make([]proxyIPCount, 0, len(r.proxyIPs))
	for k, n := range r.proxyIPs {
		c.proxyIPs = append(c.proxyIPs, proxyIPCount{k, n})
	}
	c.clientPolls = make([]clientCount, 0, len(r.clientPolls))
	for k, n := range r.clientPolls {
		c.clientPolls = append(c.clientPolls, clientCount{k, n})
	}
	r.mu.Unlock()
	c.emit(ch, &r.descs)
}

type proxyIPCount struct {
	k proxyIPKey
	n uint64
}

type clientCount struct {
	k clientKey
	n uint64
}

type collected struct {
	proxyPolls      [numTypes][numNATs][2]uint64
	relayPolls      [numTypes][numNATs][2]uint64
	relayRejections [numTypes][numNATs]uint64
	answers         [numTypes][2]uint64
	unanswered      [numTypes]uint64
	available       [numTypes][numNATs]int
	untrackedIPs    uint64
	rateLimited     [numEndpoints]uint64
	rejected        [numEndpoints][numReasons]uint64
	connsRefused    uint64
	acceptErrors    [numListeners][2]uint64
	durations       [numEndpoints]histogram
	proxyIPs        []proxyIPCount
	clientPolls     []clientCount
}

func (c *collected) emit(ch chan<- prometheus.Metric, d *descs) {
	pollStatus := [2]string{"idle", "matched"}
	relay := [2]string{"absent", "present"}
	answerStatus := [2]string{"success", "client_gone"}
	for t := range typeIdx(numTypes) {
		ts := t.String()
		for n := range natIdx(numNATs) {
			ns := n.String()
			for i := range 2 {
				counter(ch, d.proxyPolls, c.proxyPolls[t][n][i], ns, ts, pollStatus[i])
				counter(ch, d.relayPolls, c.relayPolls[t][n][i], ns, ts, relay[i])
			}
			counter(ch, d.relayRejections, c.relayRejections[t][n], ns, ts)
			// Every (type, NAT) gauge is exported, zeros included, so
			// dashboards see the full set from the start.
			ch <- prometheus.MustNewConstMetric(d.available, prometheus.GaugeValue,
				float64(max(0, c.available[t][n])), ts, ns)
		}
		for i := range 2 {
			counter(ch, d.answers, c.answers[t][i], ts, answerStatus[i])
		}
		counter(ch, d.unanswered, c.unanswered[t], ts)
	}
	counter(ch, d.untrackedIPs, c.untrackedIPs)
	for _, p := range c.proxyIPs {
		counter(ch, d.proxyIPs, p.n, p.k.t.String(), p.k.n.String(), p.k.cc)
	}
	for _, p := range c.clientPolls {
		counter(ch, d.clientPolls, p.n, p.k.n.String(), p.k.s.String(), p.k.m.String(), p.k.cc)
	}
	counter(ch, d.connsRefused, c.connsRefused, "addr_limit")
	for l, name := range listenerNames {
		counter(ch, d.acceptErrors, c.acceptErrors[l][0], name, "no_files")
		counter(ch, d.acceptErrors, c.acceptErrors[l][1], name, "other")
	}
	for e := range endpointIdx(numEndpoints) {
		es := e.String()
		counter(ch, d.rateLimited, c.rateLimited[e], es)
		for why := range reasonIdx(numReasons) {
			counter(ch, d.rejected, c.rejected[e][why], es, why.String())
		}
		if h := &c.durations[e]; h.n > 0 {
			ch <- h.metric(d.durations, es)
		}
	}
}

// durationBuckets returns the upper bounds (seconds) of the request
// duration histogram buckets. Proxy polls are held up to about 10 s and
// client requests up to about 5 s.
func durationBuckets() [numBuckets]float64 {
	return [numBuckets]float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30}
}

const numBuckets = 13

// histogram counts observations per bucket (not cumulative); counts[i] is
// the number of observations v with bounds[i-1] < v <= bounds[i], and
// counts[numBuckets] those above the last bound.
type histogram struct {
	counts [numBuckets + 1]uint64
	n      uint64
	sum    float64
}

func (h *histogram) observe(v float64) {
	bounds := durationBuckets()
	i, _ := slices.BinarySearch(bounds[:], v)
	h.counts[i]++
	h.n++
	h.sum += v
}

// metric returns h as a Prometheus histogram whose cumulative bucket counts
// and total count are rounded up to multiples of 8 (rounding a cumulative
// count keeps the buckets non-decreasing). The sum is exact.
func (h *histogram) metric(desc *prometheus.Desc, labels ...string) prometheus.Metric {
	bounds := durationBuckets()
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, le := range bounds {
		cum += h.counts[i]
		buckets[le] = binCount(cum)
	}
	return prometheus.MustNewConstHistogram(desc, binCount(h.n), h.sum, buckets, labels...)
}
