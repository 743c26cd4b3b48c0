package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flurrypt/flurry/internal/sleep"
)

// Leftover checks (BrokerConfig.CheckURLs).
const (
	// leftoverWait bounds how long a broker may take to let go of the
	// polls of proxies that have stopped.
	leftoverWait = 15 * time.Second
	// maxMetricsBody bounds a scraped metrics page.
	maxMetricsBody = 4 << 20
)

// BrokerLeftover is what one broker still holds once the load has stopped:
// its waiting polls (flurry_broker_available_proxies, which must fall to
// 0) and its goroutines (go_goroutines) then.
type BrokerLeftover struct {
	URL          string  `json:"url"`
	WaitingPolls float64 `json:"waiting_polls"`
	Goroutines   float64 `json:"goroutines"`
	Error        string  `json:"error,omitempty"`
}

// checkLeftovers scrapes each of urls until its broker holds no waiting
// poll or leftoverWait passes.
func checkLeftovers(ctx context.Context, urls []string) []BrokerLeftover {
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	out := make([]BrokerLeftover, len(urls))
	for i, u := range urls {
		out[i].URL = u
		deadline := time.Now().Add(leftoverWait)
		for {
			fams, err := scrape(ctx, client, u)
			if err != nil {
				out[i].Error = err.Error()
			} else {
				out[i].Error = ""
				out[i].WaitingPolls = sumFamily(fams["flurry_broker_available_proxies"])
				out[i].Goroutines = sumFamily(fams["go_goroutines"])
				if out[i].WaitingPolls == 0 {
					break
				}
			}
			if time.Now().After(deadline) || !sleep.For(ctx, 200*time.Millisecond) {
				break
			}
		}
	}
	return out
}

// scrape fetches and parses a Prometheus text page.
func scrape(ctx context.Context, client *http.Client, url string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(io.LimitReader(resp.Body, maxMetricsBody))
}

// sumFamily sums the gauge, counter or untyped values of every series of f
// (0 for nil).
func sumFamily(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return sum
}
