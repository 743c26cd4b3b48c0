package demo

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HTTPScraper reads Prometheus text metrics over loopback HTTP.
type HTTPScraper struct {
	client *http.Client
}

// NewHTTPScraper returns a scraper with its own HTTP client.
func NewHTTPScraper() *HTTPScraper {
	return &HTTPScraper{client: newHTTPClient(5 * time.Second)}
}

// Metric fetches url and returns the sum of every series of metric name
// (any labels), or an error if there is none.
func (s *HTTPScraper) Metric(ctx context.Context, url, name string) (float64, error) {
	body, err := httpGet(ctx, s.client, url, http.StatusOK)
	if err != nil {
		return 0, err
	}
	v, ok := SumMetric(body, name)
	if !ok {
		return 0, fmt.Errorf("metric %s not found at %s", name, url)
	}
	return v, nil
}

// Close releases idle connections.
func (s *HTTPScraper) Close() {
	s.client.CloseIdleConnections()
}

// SumMetric sums the values of every series of metric name in a Prometheus
// text exposition; ok is false if there is none.
func SumMetric(text []byte, name string) (sum float64, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			rest = rest[end+1:]
		case strings.HasPrefix(rest, " "):
		default:
			continue // a longer name with this prefix
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		sum += v
		ok = true
	}
	return sum, ok
}
