package stats

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// getOnly answers 405 to everything but GET and HEAD and reports whether
// the request may go on.
func getOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

// PrometheusHandler serves the registry (Config.Registry or the Recorder's
// own) in the Prometheus exposition format, for GET /prometheus or a
// separate metrics listener.
func (r *Recorder) PrometheusHandler() http.Handler {
	h := promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if getOnly(w, req) {
			h.ServeHTTP(w, req)
		}
	})
}

// MetricsHandler serves the metrics log (every descriptor written so far)
// as text/plain, for GET /metrics; 404 when Config.MetricsLogPath is empty
// or the file cannot be opened, as in Snowflake.
func (r *Recorder) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !getOnly(w, req) {
			return
		}
		if r.logPath == "" {
			http.NotFound(w, req)
			return
		}
		f, err := os.Open(r.logPath)
		if err != nil {
			http.NotFound(w, req)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = io.Copy(w, f) // a failed write means the client went away
	})
}

// DebugHandler serves WriteDebug of the proxies currently available (as
// counted by AvailableProxies), for GET /debug.
func (r *Recorder) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !getOnly(w, req) {
			return
		}
		var buf bytes.Buffer
		_ = WriteDebug(&buf, r.Available()) // a bytes.Buffer write cannot fail
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(buf.Bytes())
	})
}

// Instrument returns h wrapped so that every request's duration is
// recorded with ObserveRequest(endpoint, ...).
func (r *Recorder) Instrument(endpoint string, h http.Handler) http.Handler {
	e := endpointIndex(endpoint).String()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		defer func() { r.ObserveRequest(e, time.Since(start)) }()
		h.ServeHTTP(w, req)
	})
}
