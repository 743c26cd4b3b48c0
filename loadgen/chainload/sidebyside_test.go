package chainload

import (
	"errors"
	"testing"

	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

func TestSideBySideConfigChecks(t *testing.T) {
	for _, cfg := range []SideBySideConfig{
		{Dir: t.TempDir()},
		{Implementations: []chainproc.Implementation{{Name: "a"}}},
		{Dir: t.TempDir(), Implementations: []chainproc.Implementation{{Name: "a"}, {Name: "a"}}},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, measure.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
