package netlab

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DefaultQueue is the queueing delay a rate-limited path accepts before it
// drops at the tail, when Profile.Queue is zero.
const DefaultQueue = 50 * time.Millisecond

// Limits on profile values: far beyond any real path, they keep arithmetic
// from overflowing and a typo from parking packets for a day.
const (
	maxDelay = time.Minute
	maxRate  = 1_000_000_000_000 // 1 Tbit/s
)

// A Profile shapes one direction of the path through the box. The zero
// Profile is a perfect LAN: no delay, no loss, no rate limit.
type Profile struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Jitter is the standard deviation of a normal random addition to
	// Delay, drawn per packet (clipped to three deviations and at zero).
	// Without Reorder a packet never leaves before the one ahead of it.
	Jitter time.Duration
	// Loss is the probability (0..1) that a packet is lost, independently
	// of the others.
	Loss float64
	// Rate is the bottleneck rate in bits per second; 0 means unlimited.
	Rate int64
	// Queue is the most queueing delay at Rate a packet may face before it
	// is dropped at the tail; 0 means DefaultQueue. Unused without Rate.
	Queue time.Duration
	// Reorder lets jitter reorder packets, as a multipath link would.
	Reorder bool
}

// ProfileNames lists the named profiles ParseProfile knows, mildest first.
func ProfileNames() []string {
	return []string{"lan", "wifi", "intercontinental", "mobile"}
}

// NamedProfile returns the named profile (one-way figures, applied to each
// direction):
//
//	lan               no delay, no loss, no rate limit
//	wifi              10 ms, 2 ms jitter, 0.5 % loss
//	intercontinental  75 ms, 5 ms jitter, 1 % loss
//	mobile            150 ms, 30 ms jitter, 3 % loss, 5 Mbit/s
func NamedProfile(name string) (Profile, bool) {
	switch name {
	case "lan":
		return Profile{}, true
	case "wifi":
		return Profile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.005}, true
	case "intercontinental":
		return Profile{Delay: 75 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01}, true
	case "mobile":
		return Profile{Delay: 150 * time.Millisecond, Jitter: 30 * time.Millisecond, Loss: 0.03, Rate: 5_000_000}, true
	}
	return Profile{}, false
}

// ParseProfile parses a profile: a name from ProfileNames, or
// comma-separated parameters, or a name followed by parameters that
// override it:
//
//	wifi
//	delay=20ms,jitter=2ms,loss=0.5%,rate=5mbit
//	mobile,loss=5%,queue=100ms,reorder
//
// Parameters: delay, jitter, queue (Go durations), loss (a percentage with
// % or a fraction), rate (bits per second, with an optional suffix bit,
// kbit, mbit or gbit), reorder (alone, or =true/false). The empty string
// is lan.
func ParseProfile(s string) (Profile, error) {
	var p Profile
	for i, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			if s == "" || strings.TrimSpace(s) == "" {
				break
			}
			return Profile{}, fmt.Errorf("%w: empty parameter in %q", ErrInvalidProfile, s)
		}
		key, val, hasVal := strings.Cut(tok, "=")
		if !hasVal {
			if key == "reorder" {
				p.Reorder = true
				continue
			}
			named, ok := NamedProfile(key)
			if !ok || i != 0 {
				return Profile{}, fmt.Errorf("%w: unknown profile %q (known: %s)", ErrInvalidProfile, key, strings.Join(ProfileNames(), ", "))
			}
			p = named
			continue
		}
		var err error
		switch key {
		case "delay":
			p.Delay, err = parseDuration(val)
		case "jitter":
			p.Jitter, err = parseDuration(val)
		case "queue":
			p.Queue, err = parseDuration(val)
		case "loss":
			p.Loss, err = parseLoss(val)
		case "rate":
			p.Rate, err = parseRate(val)
		case "reorder":
			p.Reorder, err = strconv.ParseBool(val)
		default:
			return Profile{}, fmt.Errorf("%w: unknown parameter %q", ErrInvalidProfile, key)
		}
		if err != nil {
			return Profile{}, fmt.Errorf("%w: %s: %v", ErrInvalidProfile, key, err)
		}
	}
	if err := p.validate(); err != nil {
		return Profile{}, err
	}
	return p, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 || d > maxDelay {
		return 0, fmt.Errorf("%s is not within 0..%s", s, maxDelay)
	}
	return d, nil
}

func parseLoss(s string) (float64, error) {
	num, percent := strings.CutSuffix(s, "%")
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, err
	}
	if percent {
		f /= 100
	}
	if math.IsNaN(f) || f < 0 || f > 1 {
		return 0, fmt.Errorf("%s is not within 0..100%%", s)
	}
	return f, nil
}

func parseRate(s string) (int64, error) {
	lower := strings.ToLower(s)
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"bit", 1}} {
		if rest, ok := strings.CutSuffix(lower, u.suffix); ok {
			lower, mult = rest, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(lower, 64)
	if err != nil {
		return 0, err
	}
	f *= mult
	if math.IsNaN(f) || f < 0 || f > maxRate {
		return 0, fmt.Errorf("%s is not within 0..1000gbit", s)
	}
	return int64(f), nil
}

// validate reports whether every field is in range.
func (p Profile) validate() error {
	switch {
	case p.Delay < 0 || p.Delay > maxDelay:
		return fmt.Errorf("%w: delay %s not within 0..%s", ErrInvalidProfile, p.Delay, maxDelay)
	case p.Jitter < 0 || p.Jitter > maxDelay:
		return fmt.Errorf("%w: jitter %s not within 0..%s", ErrInvalidProfile, p.Jitter, maxDelay)
	case p.Queue < 0 || p.Queue > maxDelay:
		return fmt.Errorf("%w: queue %s not within 0..%s", ErrInvalidProfile, p.Queue, maxDelay)
	case math.IsNaN(p.Loss) || p.Loss < 0 || p.Loss > 1:
		return fmt.Errorf("%w: loss %v not within 0..1", ErrInvalidProfile, p.Loss)
	case p.Rate < 0 || p.Rate > maxRate:
		return fmt.Errorf("%w: rate %d not within 0..%d", ErrInvalidProfile, p.Rate, int64(maxRate))
	}
	return nil
}

// perfect reports whether the profile leaves packets alone, so that the
// box may forward them at once.
func (p Profile) perfect() bool {
	return p.Delay == 0 && p.Jitter == 0 && p.Loss == 0 && p.Rate == 0
}

// queue returns the queueing delay bound in effect.
func (p Profile) queue() time.Duration {
	if p.Queue == 0 {
		return DefaultQueue
	}
	return p.Queue
}

// String formats the profile so that ParseProfile reads it back: "lan"
// for the zero Profile, else parameters.
func (p Profile) String() string {
	var parts []string
	if p.Delay != 0 {
		parts = append(parts, "delay="+p.Delay.String())
	}
	if p.Jitter != 0 {
		parts = append(parts, "jitter="+p.Jitter.String())
	}
	if p.Loss != 0 {
		parts = append(parts, "loss="+strconv.FormatFloat(p.Loss*100, 'g', -1, 64)+"%")
	}
	if p.Rate != 0 {
		switch {
		case p.Rate%1_000_000_000 == 0:
			parts = append(parts, fmt.Sprintf("rate=%dgbit", p.Rate/1_000_000_000))
		case p.Rate%1_000_000 == 0:
			parts = append(parts, fmt.Sprintf("rate=%dmbit", p.Rate/1_000_000))
		case p.Rate%1000 == 0:
			parts = append(parts, fmt.Sprintf("rate=%dkbit", p.Rate/1000))
		default:
			parts = append(parts, fmt.Sprintf("rate=%dbit", p.Rate))
		}
	}
	if p.Queue != 0 {
		parts = append(parts, "queue="+p.Queue.String())
	}
	if p.Reorder {
		parts = append(parts, "reorder")
	}
	if len(parts) == 0 {
		return "lan"
	}
	return strings.Join(parts, ",")
}
