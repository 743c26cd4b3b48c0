package brokerload

import (
	"context"
	"net/http"
	"time"

	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/brokerwire"
)

// Leftover checks (BrokerConfig.CheckURLs).

// leftoverWait bounds how long a broker may take to let go of the polls
// of proxies that have stopped.
const leftoverWait = 15 * time.Second

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
			fams, err := brokerwire.ScrapeMetrics(ctx, client, u)
			if err != nil {
				out[i].Error = err.Error()
			} else {
				out[i].Error = ""
				out[i].WaitingPolls = brokerwire.SumFamily(fams["flurry_broker_available_proxies"])
				out[i].Goroutines = brokerwire.SumFamily(fams["go_goroutines"])
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
