package brokerload

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// Mix is a weighted list of values, such as a NAT-type or proxy-type mix.
// Simulated peer i gets the value whose cumulative weight covers i modulo
// the total weight, so a mix is spread evenly and deterministically.
type Mix []MixEntry

// MixEntry is one value of a Mix and its weight.
type MixEntry struct {
	Value  string `json:"value"`
	Weight int    `json:"weight"`
}

// ParseMix parses "a=3,b=1" (a bare "a" means weight 1).
func ParseMix(s string) (Mix, error) {
	var m Mix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, w, hasWeight := strings.Cut(part, "=")
		e := MixEntry{Value: strings.TrimSpace(v), Weight: 1}
		if hasWeight {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil || n < 0 || n > 1_000_000 {
				return nil, fmt.Errorf("%w: mix entry %q: weight must be 0..1000000", measure.ErrInvalidConfig, part)
			}
			e.Weight = n
		}
		m = append(m, e)
	}
	if m.total() == 0 {
		return nil, fmt.Errorf("%w: mix %q has no positive weight", measure.ErrInvalidConfig, s)
	}
	return m, nil
}

// String formats m as ParseMix reads it.
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.Value + "=" + strconv.Itoa(e.Weight)
	}
	return strings.Join(parts, ",")
}

func (m Mix) total() int {
	t := 0
	for _, e := range m {
		t += max(e.Weight, 0)
	}
	return t
}

// pick returns the value for peer i.
func (m Mix) pick(i int) string {
	t := m.total()
	if t == 0 {
		return ""
	}
	k := i % t
	for _, e := range m {
		if k < e.Weight {
			return e.Value
		}
		k -= max(e.Weight, 0)
	}
	return m[len(m)-1].Value
}

func mustMix(s string) Mix {
	m, err := ParseMix(s)
	if err != nil {
		return Mix{{Value: s, Weight: 1}}
	}
	return m
}
