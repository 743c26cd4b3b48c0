package measure

import (
	"errors"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
)

func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1", true},
		{"127.8.9.10", true},
		{"::1", true},
		{"[::1]", true},
		{"localhost", true},
		{"LocalHost", true},
		{"::ffff:127.0.0.1", true},
		{"10.0.0.1", false},
		{"192.168.1.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"example.com", false},
		{"localhost.example.com", false},
		{"", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			err := CheckHost(tc.host, false)
			if (err == nil) != tc.ok {
				t.Fatalf("checkHost(%q) = %v, want ok=%v", tc.host, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrNotLoopback) {
				t.Fatalf("error %v does not match ErrNotLoopback", err)
			}
			if err := CheckHost(tc.host, true); err != nil {
				t.Fatalf("with allow: %v", err)
			}
		})
	}
}

// TestDialerRefusesNonLoopback checks the second line of defence: a dial
// whose resolved address is not loopback fails before connecting.
func TestDialerRefusesNonLoopback(t *testing.T) {
	ctx := loadgentest.Context(t)
	_, err := NewDialer(false).DialContext(ctx, "tcp", "192.0.2.1:80")
	if !errors.Is(err, ErrNotLoopback) {
		t.Fatalf("dial 192.0.2.1: %v, want ErrNotLoopback", err)
	}
}

func TestSummarize(t *testing.T) {
	r := NewRecorder()
	for i := 1; i <= 100; i++ {
		r.Add(time.Duration(i) * time.Millisecond)
	}
	p := r.Percentiles()
	want := Percentiles{Count: 100, MeanMs: 50.5, P50Ms: 50, P90Ms: 90, P99Ms: 99, MaxMs: 100}
	if p != want {
		t.Fatalf("got %+v, want %+v", p, want)
	}
	if got := NewRecorder().Percentiles(); got != (Percentiles{}) {
		t.Fatalf("empty recorder: %+v", got)
	}
}

func TestRecorderBounded(t *testing.T) {
	r := NewRecorder()
	for i := range maxSamples + 1000 {
		r.Add(time.Duration(i))
	}
	if len(r.samples) != maxSamples {
		t.Fatalf("kept %d samples, want %d", len(r.samples), maxSamples)
	}
	if p := r.Percentiles(); p.Count != maxSamples+1000 {
		t.Fatalf("count %d", p.Count)
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.1, 2}, {3, 5}, {7, 10}, {4200, 5000}} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
