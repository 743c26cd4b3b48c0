package wscarrier

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

func TestSourceAddrs(t *testing.T) {
	s, err := NewSourceAddrs(netip.MustParsePrefix("127.0.0.0/30"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, s.next().IP.String())
	}
	if want := []string{"127.0.0.2", "127.0.0.1", "127.0.0.2"}; !slices.Equal(got, want) {
		t.Errorf("source addresses %v, want %v", got, want)
	}
	for _, bad := range []string{"::1/64", "127.0.0.1/32"} {
		if _, err := NewSourceAddrs(netip.MustParsePrefix(bad)); !errors.Is(err, measure.ErrInvalidConfig) {
			t.Errorf("newSourceAddrs(%s) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}
