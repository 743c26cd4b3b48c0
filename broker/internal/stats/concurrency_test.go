package stats

import (
	"io"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/messages"
)

// Every method may be called from many goroutines while the metrics are
// scraped and periods end; nothing is lost.
func TestConcurrentUse(t *testing.T) {
	r := newTestRecorder(t, Config{})
	const workers, each = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				ip := netip.AddrFrom4([4]byte{129, 97, byte(w), byte(i)})
				typ := messages.KnownProxyTypes()[i%5]
				r.ProxyPoll(ip, typ, messages.NATRestricted, true)
				r.AvailableProxies(typ, messages.NATRestricted, +1)
				r.AvailableProxies(typ, messages.NATRestricted, -1)
				r.ProxyPollResult(typ, messages.NATRestricted, i%2 == 0)
				r.ClientPoll(ip, messages.NATUnknown, MethodHTTP, StatusMatched)
				r.ObserveRequest(EndpointClient, time.Millisecond)
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := r.Registry().Gather(); err != nil {
				t.Error(err)
			}
			_ = r.EndPeriod(io.Discard)
			_ = r.Snapshot()
			_ = r.Available()
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()

	fams := scrape(t, r)
	if v, _ := value(fams, "flurry_broker_client_polls_total", "nat", "unknown", "status", "matched", "rendezvous_method", "http", "cc", "??"); v != workers*each {
		t.Errorf("client polls %v, want %d", v, workers*each)
	}
	if v, _ := value(fams, "flurry_broker_available_proxies", "type", "standalone", "nat", "restricted"); v != 0 {
		t.Errorf("available %v, want 0", v)
	}
	if v, _ := value(fams, "flurry_broker_request_duration_seconds", "endpoint", "client"); v != workers*each {
		t.Errorf("request count %v, want %d", v, workers*each)
	}
}
