package stats

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flurrypt/flurry/messages"
	"go.uber.org/goleak"
)

// Run appends one descriptor per interval to the metrics log, each
// describing only its own period, and stops when its context ends.
func TestRunWritesDescriptors(t *testing.T) {
	defer goleak.VerifyNone(t)
	path := filepath.Join(t.TempDir(), "metrics.log")
	geo := testGeoIP(t)
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 00:00:00 UTC.
		r, err := New(Config{GeoIP: geo, MetricsLogPath: path, Interval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()

		pollIdle(r, addr(t, "129.97.208.23"), "standalone", messages.NATUnknown)
		time.Sleep(time.Hour)
		synctest.Wait() // the first descriptor is written
		r.ClientPoll(addr(t, "198.51.100.1"), messages.NATUnknown, MethodHTTP, StatusDenied)
		time.Sleep(time.Hour)
		synctest.Wait()
		time.Sleep(30 * time.Minute) // half a period: nothing written
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}

		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		descs := strings.SplitAfter(string(b), "snowflake-ips-nat-unknown ")
		if len(descs) != 3 { // two descriptors and the rest of the last line
			t.Fatalf("metrics log has %d descriptors, want 2:\n%s", len(descs)-1, b)
		}
		first, second := descs[0], descs[1]
		for _, want := range []string{"snowflake-stats-end 2000-01-01 01:00:00 (3600 s)\n", "\nsnowflake-ips CA=1\n",
			"\nsnowflake-ips-standalone 1\n", "\nsnowflake-idle-count 8\n", "\nclient-denied-count 0\n"} {
			if !strings.Contains(first, want) {
				t.Errorf("first descriptor lacks %q:\n%s", want, first)
			}
		}
		for _, want := range []string{"\nsnowflake-stats-end 2000-01-01 02:00:00 (3600 s)\n", "\nsnowflake-ips \n",
			"\nsnowflake-ips-standalone 0\n", "\nclient-denied-count 8\n", "\nclient-http-ips FR=8\n"} {
			if !strings.Contains(second, want) {
				t.Errorf("second descriptor lacks %q:\n%s", want, second)
			}
		}

		// /metrics serves the file as it is.
		w := httptest.NewRecorder()
		r.MetricsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if w.Code != http.StatusOK || w.Body.String() != string(b) {
			t.Errorf("GET /metrics: %d\n%s", w.Code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	})
}

// Without a metrics log, descriptors go to the logger and /metrics is 404.
func TestRunWithoutMetricsLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		r, err := New(Config{Interval: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		r.ClientPoll(addr(t, "192.0.2.1"), messages.NATRestricted, MethodHTTP, StatusDenied)
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel()
		<-done
		if !strings.Contains(logs.String(), `client-restricted-denied-count 8\nclient-unrestricted-denied-count 0`) {
			t.Errorf("log lacks the descriptor:\n%s", logs.String())
		}
		w := httptest.NewRecorder()
		r.MetricsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("GET /metrics: %d, want 404", w.Code)
		}
	})
}

// A metrics log that cannot be written loses the period but Run goes on.
func TestRunMetricsLogError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.log")
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		r, err := New(Config{MetricsLogPath: path, Interval: time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		// Replace the file by a directory: opening it for writing fails.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(path, 0o700); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx) }()
		r.ClientPoll(addr(t, "192.0.2.1"), messages.NATRestricted, MethodHTTP, StatusDenied)
		time.Sleep(time.Minute)
		synctest.Wait()
		if !strings.Contains(logs.String(), "metrics descriptor lost") {
			t.Errorf("no error logged:\n%s", logs.String())
		}
		if got := descriptor(t, r); !strings.Contains(got, "\nclient-denied-count 0\n") {
			t.Errorf("period did not end:\n%s", got)
		}
		cancel()
		<-done
	})
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"negative interval", Config{Interval: -time.Hour}, ErrInvalidConfig},
		{"sub-second interval", Config{Interval: time.Millisecond}, ErrInvalidConfig},
		{"negative max IPs", Config{MaxProxyIPs: -1}, ErrInvalidConfig},
		{"unwritable metrics log", Config{MetricsLogPath: filepath.Join(t.TempDir(), "no", "such", "dir")}, ErrMetricsLog},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, tt.want) {
				t.Errorf("New: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMetricsHandlerMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.log")
	r := newTestRecorder(t, Config{MetricsLogPath: path})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	r.MetricsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("GET /metrics without the file: %d, want 404", w.Code)
	}
	w = httptest.NewRecorder()
	r.MetricsHandler().ServeHTTP(w, httptest.NewRequest(http.MethodDelete, "/metrics", nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /metrics: %d, want 405", w.Code)
	}
}
