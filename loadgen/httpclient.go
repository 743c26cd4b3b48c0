package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"
)

// newHTTPClient returns a client with its own transport (never
// http.DefaultTransport): HTTP/1.1, one connection per concurrent request,
// no proxy from the environment, loopback-only dials unless allow.
func newHTTPClient(conns int, timeout time.Duration, insecure, allow bool) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           newDialer(allow).DialContext,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		DisableCompression:    true,
		// #nosec G402 -- only with -insecure, for self-signed test servers.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: insecure, MinVersion: tls.VersionTLS12},
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// post sends body to url and returns the response body (at most limit
// bytes) and status.
func post(ctx context.Context, c *http.Client, url string, body []byte, limit int64) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, resp.StatusCode, err
	}
	if int64(len(b)) > limit {
		return nil, resp.StatusCode, fmt.Errorf("response longer than %d bytes", limit)
	}
	return b, resp.StatusCode, nil
}
