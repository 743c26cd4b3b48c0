package netlab

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestParseProfile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Profile
	}{
		{"", Profile{}},
		{"lan", Profile{}},
		{"wifi", Profile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.005}},
		{"intercontinental", Profile{Delay: 75 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01}},
		{"mobile", Profile{Delay: 150 * time.Millisecond, Jitter: 30 * time.Millisecond, Loss: 0.03, Rate: 5_000_000}},
		{"delay=20ms,jitter=2ms,loss=0.5%,rate=5mbit", Profile{Delay: 20 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.005, Rate: 5_000_000}},
		{"loss=0.25", Profile{Loss: 0.25}},
		{"rate=1.5Mbit,queue=100ms", Profile{Rate: 1_500_000, Queue: 100 * time.Millisecond}},
		{"rate=64kbit", Profile{Rate: 64_000}},
		{"rate=1gbit", Profile{Rate: 1_000_000_000}},
		{"rate=9600", Profile{Rate: 9600}},
		{"rate=9600bit", Profile{Rate: 9600}},
		{"mobile, loss=5%, reorder", Profile{Delay: 150 * time.Millisecond, Jitter: 30 * time.Millisecond, Loss: 0.05, Rate: 5_000_000, Reorder: true}},
		{"delay=1ms,reorder=false", Profile{Delay: time.Millisecond}},
	} {
		got, err := ParseProfile(tc.in)
		if err != nil {
			t.Errorf("ParseProfile(%q): %v", tc.in, err)
			continue
		}
		if got.Loss != tc.want.Loss && math.Abs(got.Loss-tc.want.Loss) > 1e-12 {
			t.Errorf("ParseProfile(%q) loss = %v, want %v", tc.in, got.Loss, tc.want.Loss)
		}
		got.Loss = tc.want.Loss
		if got != tc.want {
			t.Errorf("ParseProfile(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestParseProfileRejects(t *testing.T) {
	for _, in := range []string{
		"dialup", "delay=-1ms", "delay=2h", "loss=101%", "loss=-0.1", "loss=NaN",
		"rate=-5mbit", "rate=fast", "rate=inf", "rate=2000gbit", "jitter=x", "colour=blue",
		"delay=1ms,,loss=1%", "delay=1ms,wifi", "reorder=maybe",
	} {
		if p, err := ParseProfile(in); !errors.Is(err, ErrInvalidProfile) {
			t.Errorf("ParseProfile(%q) = %+v, %v; want ErrInvalidProfile", in, p, err)
		}
	}
}

func TestProfileStringRoundTrip(t *testing.T) {
	for _, name := range ProfileNames() {
		p, ok := NamedProfile(name)
		if !ok {
			t.Fatalf("NamedProfile(%q) missing", name)
		}
		back, err := ParseProfile(p.String())
		if err != nil {
			t.Fatalf("ParseProfile(%q): %v", p.String(), err)
		}
		if !sameProfile(back, p) {
			t.Errorf("%s: %q parses to %+v, want %+v", name, p.String(), back, p)
		}
	}
}

// sameProfile compares profiles, allowing for rounding in Loss.
func sameProfile(a, b Profile) bool {
	if math.Abs(a.Loss-b.Loss) > 1e-9 {
		return false
	}
	a.Loss = b.Loss
	return a == b
}

func FuzzParseProfile(f *testing.F) {
	for _, s := range []string{"", "wifi", "mobile,loss=5%,reorder", "delay=20ms,jitter=2ms,loss=0.5%,rate=5mbit,queue=10ms", "rate=1e300", "loss=1e-400%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProfile(s)
		if err != nil {
			return
		}
		if err := p.validate(); err != nil {
			t.Fatalf("ParseProfile(%q) returned an invalid profile: %v", s, err)
		}
		back, err := ParseProfile(p.String())
		if err != nil {
			t.Fatalf("ParseProfile(%q) = %+v whose String %q does not parse: %v", s, p, p.String(), err)
		}
		if !sameProfile(back, p) {
			t.Fatalf("ParseProfile(%q) = %+v; String %q parses to %+v", s, p, p.String(), back)
		}
	})
}
